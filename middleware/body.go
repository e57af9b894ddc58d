package middleware

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
)

// readBody reads the whole body, at most limit bytes, and puts an
// identical reader back so the handler's httpx.Parse sees the same bytes.
// Content-Length is checked first, so a declared oversize body is refused
// without reading it; a chunked one is refused once limit+1 bytes arrived.
// A chunked body that was read gets its now known length, since go-zero's
// httpx.Parse skips JSON bodies whose length is unknown.
func readBody(r *http.Request, limit int64) ([]byte, *Error) {
	if r.ContentLength > limit {
		return nil, bodyTooLarge()
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, bodyTooLarge()
		}
		return nil, malformedBody("body", "read failed")
	}
	if int64(len(data)) > limit {
		return nil, bodyTooLarge()
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.ContentLength = int64(len(data))
	r.TransferEncoding = nil
	r.GetBody = func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return data, nil
}

// isFormBody reports whether r's body is a url-encoded or multipart form.
func isFormBody(r *http.Request) bool {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mediaType == "application/x-www-form-urlencoded" || mediaType == "multipart/form-data"
}

// isJSONBody is go-zero's own test for a JSON body to parse.
func isJSONBody(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Content-Type"), "application/json")
}

// postForm parses a url-encoded or multipart body into its values, as
// net/http's ParseMultipartForm would, without touching r.
func postForm(r *http.Request, body []byte, limit int64) (url.Values, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil, nil
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, err
	}
	switch mediaType {
	case "application/x-www-form-urlencoded":
		return url.ParseQuery(string(body))
	case "multipart/form-data":
		boundary := params["boundary"]
		if boundary == "" {
			return nil, errors.New("multipart body without boundary")
		}
		form, err := multipart.NewReader(bytes.NewReader(body), boundary).ReadForm(limit)
		if err != nil {
			return nil, err
		}
		defer form.RemoveAll()
		return form.Value, nil
	}
	return nil, nil
}
