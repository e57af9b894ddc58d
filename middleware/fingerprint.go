package middleware

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"sort"
	"strconv"

	"github.com/zeromicro/go-zero/rest/pathvar"

	"github.com/zerolock/zerolock/internal/keyspec"
	"github.com/zerolock/zerolock/internal/replay"
)

// fingerprint identifies the request a stored response answers, so that a
// retry under the same key with another request is told apart (422)
// instead of being handed someone else's answer. With the rule's
// Fingerprint specs it is their values, read as keys are (a missing one is
// a 400); without, it is the whole request as the handler sees it: the
// method, the route pattern and its path variables, the query, and the
// body (see addBody). Headers are left out: tokens and tracing headers
// change between a request and its retry.
func (req *request) fingerprint(ru *rule) ([replay.FingerprintSize]byte, *Error) {
	hs := keyspec.NewHasher()
	if ru.fingerprint != nil {
		if err := req.addAll(hs, ru.fingerprint); err != nil {
			return [replay.FingerprintSize]byte{}, err
		}
	} else {
		hs.AddString(keyspec.String, ru.method)
		hs.AddString(keyspec.String, ru.path)
		vars := make(map[string][]string)
		for name, v := range pathvar.Vars(req.r) {
			vars[name] = []string{v}
		}
		addFields(hs, vars)
		addFields(hs, req.queryValues())
		req.addBody(hs)
	}
	return hs.Sum(), nil
}

// addBody adds the body by what it means to the handler, each form tagged
// with its kind: an application/json body as canonical JSON (whitespace,
// member order and number spelling do not matter, as for the body key); a
// url-encoded or multipart form as its fields sorted by name, values in
// order (a client library picks a new multipart boundary for each send);
// anything else, and a body that does not parse as its content type says,
// as its bytes.
func (req *request) addBody(hs *keyspec.Hasher) {
	switch {
	case len(req.body) == 0:
		hs.AddString(keyspec.String, "none")
		return
	case isJSONBody(req.r):
		if root, err := req.jsonBody(); err == nil {
			hs.AddString(keyspec.String, "json")
			if hs.AddJSON(root) == nil {
				return
			}
			// AddJSON added nothing (a number it cannot make canonical):
			// the bytes follow the tag.
		}
	case isFormBody(req.r):
		if values, files, err := formFields(req.r.Header.Get("Content-Type"), req.body); err == nil {
			hs.AddString(keyspec.String, "form")
			addFields(hs, values)
			addFields(hs, files)
			return
		}
	}
	hs.AddString(keyspec.String, "bytes")
	hs.Add(keyspec.Bytes, req.body)
}

// addFields adds fields sorted by name, each with its values in order,
// counted so that no two sets of fields add the same sequence.
func addFields(hs *keyspec.Hasher, fields map[string][]string) {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	hs.AddString(keyspec.Number, strconv.Itoa(len(names)))
	for _, name := range names {
		hs.AddString(keyspec.String, name)
		hs.AddString(keyspec.Number, strconv.Itoa(len(fields[name])))
		for _, v := range fields[name] {
			hs.AddString(keyspec.String, v)
		}
	}
}

// formFields parses a url-encoded or multipart body into its values and,
// for multipart, its files (file name, then content, per file).
func formFields(contentType string, body []byte) (values, files url.Values, err error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, nil, err
	}
	if mediaType == "application/x-www-form-urlencoded" {
		values, err = url.ParseQuery(string(body))
		return values, nil, err
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, nil, errors.New("multipart body without boundary")
	}
	values, files = url.Values{}, url.Values{}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return values, files, nil
		}
		if err != nil {
			return nil, nil, err
		}
		name := part.FormName()
		content, err := io.ReadAll(part) // bounded: the body is in memory
		if err != nil {
			return nil, nil, err
		}
		switch {
		case name == "":
			// net/http's ReadForm skips such parts: the handler never sees them.
		case part.FileName() != "":
			files[name] = append(files[name], part.FileName(), string(content))
		default:
			values[name] = append(values[name], string(content))
		}
	}
}
