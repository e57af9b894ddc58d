package middleware

import (
	"net/http"
	"net/url"

	"github.com/zeromicro/go-zero/rest/pathvar"

	"github.com/zerolock/zerolock/internal/keyspec"
)

// request reads a request's key values, parsing the query, the form and
// the JSON body at most once each.
type request struct {
	r     *http.Request
	body  []byte
	limit int64
	// proxyHops is the rule's trusted proxy count, for the ip key.
	proxyHops int

	query    url.Values
	form     url.Values
	formDone bool
	json     any
	jsonDone bool
}

// lockKey derives the rule's lock key from r, reading (and restoring) the
// body when a key needs it.
func lockKey(ru *rule, r *http.Request, limit int64) (string, *Error) {
	req, err := readRequest(ru, r, limit)
	if err != nil {
		return "", err
	}
	return req.key(ru)
}

// readRequest prepares r for reading the rule's keys and fingerprint,
// reading (and restoring) the body when they need it.
func readRequest(ru *rule, r *http.Request, limit int64) (*request, *Error) {
	req := &request{r: r, limit: limit, proxyHops: ru.proxyHops}
	if ru.needsBody || (ru.needsForm && isFormBody(r)) {
		body, err := readBody(r, limit)
		if err != nil {
			return nil, err
		}
		req.body = body
	}
	return req, nil
}

// key is the rule's lock key for the request.
func (req *request) key(ru *rule) (string, *Error) {
	hs := keyspec.NewHasher()
	if err := req.addAll(hs, ru.specs); err != nil {
		return "", err
	}
	return ru.Key(hs), nil
}

// addAll adds the value of each spec, in order; on an error it discards hs.
func (req *request) addAll(hs *keyspec.Hasher, specs []keyspec.Spec) *Error {
	for _, s := range specs {
		if err := req.add(hs, s); err != nil {
			hs.Discard()
			return err
		}
	}
	return nil
}

func (req *request) add(hs *keyspec.Hasher, s keyspec.Spec) *Error {
	switch s.Source {
	case sourcePath:
		return addOne(hs, s, []string{pathvar.Vars(req.r)[s.Name]})
	case sourceQuery, sourceForm:
		values, err := req.formValues(s.Name)
		if err != nil {
			return malformedBody(s.Raw, "not a valid form")
		}
		return addOne(hs, s, values)
	case sourceHeader:
		return addOne(hs, s, req.r.Header.Values(s.Name))
	case sourceJSON:
		if !isJSONBody(req.r) {
			// go-zero's httpx.Parse reads JSON only from such bodies: the
			// handler would not see this field either.
			return missingField(s.Raw + " (the body is not application/json)")
		}
		return req.addJSON(hs, s, s.Path)
	case sourceClaim:
		return addClaim(hs, s, req.r.Context().Value(s.Name))
	case sourceIP:
		return addOne(hs, s, []string{clientIP(req.r, req.proxyHops)})
	case sourceBody:
		if len(req.body) == 0 {
			return missingField(s.Raw)
		}
		if !isJSONBody(req.r) {
			hs.Add(keyspec.Bytes, req.body)
			return nil
		}
		// What the handler parses, not how it is spelled: whitespace,
		// member order and number spelling do not make a new key.
		return req.addJSON(hs, s, nil)
	}
	return nil
}

// addJSON adds the value at path (nil: the whole document) of the JSON
// body, canonical; a path to nothing, null or "" is a missing field.
func (req *request) addJSON(hs *keyspec.Hasher, s keyspec.Spec, path []string) *Error {
	root, err := req.jsonBody()
	if err != nil {
		return malformedBody(s.Raw, "body is not a single valid JSON value")
	}
	v, ok := keyspec.LookupJSON(root, path)
	if !ok || v == "" {
		return missingField(s.Raw)
	}
	if hs.AddJSON(v) != nil {
		return malformedBody(s.Raw, "not a valid JSON value")
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

// addClaim adds a JWT claim; go-zero decodes claims with UseNumber, so
// numbers arrive as json.Number.
func addClaim(hs *keyspec.Hasher, s keyspec.Spec, v any) *Error {
	present, err := hs.AddValue(v)
	switch {
	case err != nil:
		return malformedBody(s.Raw, "claim cannot be encoded")
	case !present:
		return missingField(s.Raw)
	}
	return nil
}

// formValues returns the non-empty values go-zero's form tag would see for
// name: the url-encoded or multipart body's, then the query's, each also
// under the name with "[]" appended, which go-zero folds into name. More
// than one of them is ambiguous (addOne refuses it): go-zero would pick one
// by map order, and a key built from another would let a repeat through.
func (req *request) formValues(name string) ([]string, error) {
	post, err := req.postValues()
	if err != nil {
		return nil, err
	}
	query := req.queryValues()
	var values []string
	for _, vs := range [][]string{post[name], post[name+"[]"], query[name], query[name+"[]"]} {
		for _, v := range vs {
			if v != "" {
				values = append(values, v)
			}
		}
	}
	return values, nil
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
		if err := keyspec.DecodeJSON(req.body, &req.json); err != nil {
			return nil, err
		}
		req.jsonDone = true
	}
	return req.json, nil
}
