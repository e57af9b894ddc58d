package keyspec

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

var (
	// ErrUnknownSource is returned by Parse for a spec whose source is not
	// one the caller accepts.
	ErrUnknownSource = errors.New("keyspec: unknown key source")
	// ErrBadSpec is returned by Parse for a spec that is malformed: an empty
	// name where one is needed, a name where none is allowed, or a bad path.
	ErrBadSpec = errors.New("keyspec: malformed key spec")
)

// NameRule says whether a source takes a name after the colon.
type NameRule int

const (
	// NoName sources stand alone ("ip", "peer", "body").
	NoName NameRule = iota
	// Name sources need a non-empty name ("header:X-Id").
	Name
	// DottedPath sources need a dotted path ("json:items.0.sku").
	DottedPath
)

// Sources maps the source names a transport accepts to their name rules.
type Sources map[string]NameRule

// Spec is one parsed key spec.
type Spec struct {
	// Raw is the spec as written, for error messages.
	Raw string
	// Source is the part before the colon ("json", "header", "ip").
	Source string
	// Name is the part after the colon, empty for NoName sources.
	Name string
	// Path is Name split into segments, for DottedPath sources.
	Path []string
}

// String returns the spec as written.
func (s Spec) String() string {
	return s.Raw
}

// Parse parses "source:name" (or a bare "source") against the sources a
// transport accepts. It returns an error wrapping ErrUnknownSource or
// ErrBadSpec that names the spec.
func Parse(raw string, sources Sources) (Spec, error) {
	source, name, hasName := strings.Cut(raw, ":")
	source = strings.TrimSpace(source)
	rule, ok := sources[source]
	if !ok {
		return Spec{}, fmt.Errorf("%w %q in key %q (known: %s)", ErrUnknownSource, source, raw, known(sources))
	}
	spec := Spec{Raw: raw, Source: source, Name: name}
	switch rule {
	case NoName:
		if hasName {
			return Spec{}, fmt.Errorf("%w: %q takes no name after %q", ErrBadSpec, raw, source)
		}
	case Name:
		if name == "" {
			return Spec{}, fmt.Errorf("%w: %q needs a name after %q", ErrBadSpec, raw, source+":")
		}
	case DottedPath:
		path, err := ParsePath(name)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: %q: %v", ErrBadSpec, raw, err)
		}
		spec.Path = path
	}
	return spec, nil
}

// ParseAll parses every spec, returning the first error.
func ParseAll(raws []string, sources Sources) ([]Spec, error) {
	specs := make([]Spec, 0, len(raws))
	for _, raw := range raws {
		spec, err := Parse(raw, sources)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// ParsePath splits a dotted path ("order.items.0.sku") into its segments.
// Empty segments ("a..b", ".a", "a.") are an error.
func ParsePath(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		if seg == "" {
			return nil, fmt.Errorf("empty segment %d in path %q", i, path)
		}
	}
	return segs, nil
}

func known(sources Sources) string {
	names := make([]string, 0, len(sources))
	for name := range sources {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
