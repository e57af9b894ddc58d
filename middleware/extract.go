package middleware

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/zeromicro/go-zero/rest/httpx"
	"github.com/zeromicro/go-zero/rest/pathvar"

	"github.com/zerolock/zerolock/internal/keyspec"
)

// request reads a request's key values, parsing the query, the form and
// the JSON body at most once each.
type request struct {
	r     *http.Request
	body  []byte
	limit int64

	query    url.Values
	form     url.Values
	formDone bool
	json     any
	jsonDone bool
}

// lockKey derives the rule's lock key from r, reading (and restoring) the
// body when a key needs it.
func lockKey(prefix string, ru *rule, r *http.Request, limit int64) (string, *Error) {
	req := &request{r: r, limit: limit}
	if ru.needsBody {
		body, err := readBody(r, limit)
		if err != nil {
			return "", err
		}
		req.body = body
	}
	hs := keyspec.NewHasher()
	for _, s := range ru.specs {
		if err := req.add(hs, s); err != nil {
			return "", err
		}
	}
	return hs.Key(prefix, "http", ru.method, ru.path), nil
}

func (req *request) add(hs *keyspec.Hasher, s keyspec.Spec) *Error {
	switch s.Source {
	case sourcePath:
		return addOne(hs, s, []string{pathvar.Vars(req.r)[s.Name]})
	case sourceQuery:
		return addOne(hs, s, req.queryValues()[s.Name])
	case sourceForm:
		post, err := req.postValues()
		if err != nil {
			return malformedBody(s.Raw, "not a valid form")
		}
		return addOne(hs, s, append(post[s.Name], req.queryValues()[s.Name]...))
	case sourceHeader:
		return addOne(hs, s, req.r.Header.Values(s.Name))
	case sourceJSON:
		root, err := req.jsonBody()
		if err != nil {
			return malformedBody(s.Raw, "body is not a single valid JSON value")
		}
		v, ok := keyspec.LookupJSON(root, s.Path)
		if !ok || v == "" {
			return missingField(s.Raw)
		}
		if hs.AddJSON(v) != nil {
			return malformedBody(s.Raw, "not a valid JSON value")
		}
	case sourceClaim:
		return addClaim(hs, s, req.r.Context().Value(s.Name))
	case sourceIP:
		return addOne(hs, s, []string{clientAddr(req.r)})
	case sourceBody:
		if len(req.body) == 0 {
			return missingField(s.Raw)
		}
		hs.Add(keyspec.Bytes, req.body)
	}
	return nil
}

// addOne adds the single non-empty value of a field, refusing a field that
// is absent, empty or repeated: a repeated field would let two requests
// that the handler treats alike get different keys.
func addOne(hs *keyspec.Hasher, s keyspec.Spec, values []string) *Error {
	switch {
	case len(values) > 1:
		return ambiguousField(s.Raw)
	case len(values) == 0 || values[0] == "":
		return missingField(s.Raw)
	}
	hs.AddString(keyspec.String, values[0])
	return nil
}

// addClaim adds a JWT claim. go-zero decodes claims with UseNumber, so
// numbers arrive as json.Number; other types are normalised through JSON.
func addClaim(hs *keyspec.Hasher, s keyspec.Spec, v any) *Error {
	switch v := v.(type) {
	case nil:
		return missingField(s.Raw)
	case string:
		return addOne(hs, s, []string{v})
	case json.Number, bool, map[string]any, []any:
		if hs.AddJSON(v) != nil {
			return malformedBody(s.Raw, "claim is not a valid JSON value")
		}
		return nil
	case float64:
		return addClaim(hs, s, json.Number(strconv.FormatFloat(v, 'g', -1, 64)))
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return malformedBody(s.Raw, "claim cannot be encoded")
		}
		var norm any
		if err := decodeJSON(b, &norm); err != nil {
			return malformedBody(s.Raw, "claim cannot be encoded")
		}
		return addClaim(hs, s, norm)
	}
}

func (req *request) queryValues() url.Values {
	if req.query == nil {
		req.query = req.r.URL.Query()
	}
	return req.query
}

func (req *request) postValues() (url.Values, error) {
	if !req.formDone {
		form, err := postForm(req.r, req.body, req.limit)
		if err != nil {
			return nil, err
		}
		req.form, req.formDone = form, true
	}
	return req.form, nil
}

func (req *request) jsonBody() (any, error) {
	if !req.jsonDone {
		if err := decodeJSON(req.body, &req.json); err != nil {
			return nil, err
		}
		req.jsonDone = true
	}
	return req.json, nil
}

// decodeJSON decodes exactly one JSON value, numbers as json.Number.
func decodeJSON(data []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// clientAddr is httpx.GetRemoteAddr without the port of a direct peer, so
// that one client's connections share a key.
func clientAddr(r *http.Request) string {
	addr := httpx.GetRemoteAddr(r)
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
