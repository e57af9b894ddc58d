package main

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/zeromicro/go-zero/tools/goctl/api/spec"

	"github.com/zerolock/zerolock/internal/keyspec"
)

// httpSources are the key sources of the REST middleware, with its name
// rules (middleware/rule.go's httpSources).
var httpSources = keyspec.Sources{
	"path":   keyspec.Name,
	"query":  keyspec.Name,
	"form":   keyspec.Name,
	"header": keyspec.Name,
	"json":   keyspec.DottedPath,
	"claim":  keyspec.Name,
	"ip":     keyspec.NoName,
	"body":   keyspec.NoName,
}

// callerKeys names the keys that name a request's caller, as the
// middleware names them when it refuses a replay rule without one.
const callerKeys = "claim:userId (a claim go-zero's JWT puts in the context) or header:Authorization"

// standardClaims are the JWT claims go-zero's JWT middleware keeps out of
// the request context (middleware/rule.go's standardClaims).
var standardClaims = map[string]bool{"aud": true, "exp": true, "jti": true, "iat": true, "iss": true, "nbf": true, "sub": true}

// route is what a rule's keys are checked against.
type route struct {
	path    string               // the full path, prefix applied
	jwt     bool                 // the group has jwt:
	request spec.Type            // the request type, nil without one
	types   map[string]spec.Type // the .api's named types, to resolve references
}

// namedTypes indexes the .api's types by name.
func namedTypes(api *spec.ApiSpec) map[string]spec.Type {
	types := make(map[string]spec.Type, len(api.Types))
	for _, t := range api.Types {
		types[t.Name()] = t
	}
	return types
}

// checkKeys parses the keys of property (lock or lockFingerprint) with
// the middleware's parser and checks each against the route: json: paths
// against the request type's json fields, path: against the route's
// variables, form: and query: against its form fields, claim: against
// the group's jwt:, header: names against HTTP's token syntax.
func checkKeys(prop string, raws []string, rt route) ([]keyspec.Spec, []problem) {
	var specs []keyspec.Spec
	var problems []problem
	for _, raw := range raws {
		s, err := keyspec.Parse(raw, httpSources)
		if err != nil {
			problems = append(problems, problem{prop, fmt.Sprintf("%s: %v", prop, err)})
			continue
		}
		if msg := rt.check(s); msg != "" {
			problems = append(problems, problem{prop, fmt.Sprintf("%s: key %s: %s", prop, raw, msg)})
			continue
		}
		specs = append(specs, s)
	}
	return specs, problems
}

// check returns what is wrong with s on the route, or "".
func (rt route) check(s keyspec.Spec) string {
	switch s.Source {
	case "path":
		vars := pathVars(rt.path)
		if !vars[s.Name] {
			return fmt.Sprintf("the path %s has no :%s variable%s", rt.path, s.Name, listOf(" (its variables: %s)", vars))
		}
	case "json":
		if rt.request == nil {
			return "the route has no request type, so its body has no json fields"
		}
		return rt.jsonPath(rt.request, s.Path, nil)
	case "form", "query":
		if rt.request == nil {
			return "the route has no request type, so it has no form fields"
		}
		fields := make(map[string]bool)
		for name := range rt.fields(rt.request, "form") {
			fields[name] = true
		}
		if !fields[s.Name] {
			return fmt.Sprintf("%s declares no field with the form tag %q%s (go-zero reads query and form "+
				"parameters through form tags)", typeName(rt.request), s.Name, listOf("; its form fields: %s", fields))
		}
	case "claim":
		if !rt.jwt {
			return "the route's group has no jwt:, so no claim reaches the request (add jwt: to its @server, " +
				"or key on something else)"
		}
		if standardClaims[s.Name] {
			return "go-zero's JWT middleware keeps standard claims out of the context"
		}
	case "header":
		if !isToken(s.Name) {
			return fmt.Sprintf("%q is not a valid header name", s.Name)
		}
	}
	return ""
}

// jsonPath checks that path leads into t, as keyspec.LookupJSON follows
// it: an object's member by its json name, an array's element by its
// index; a map or an interface{} takes any member. walked is the part of
// the path already followed, for the message.
func (rt route) jsonPath(t spec.Type, path, walked []string) string {
	if len(path) == 0 {
		return ""
	}
	seg := path[0]
	switch v := t.(type) {
	case spec.PointerType:
		return rt.jsonPath(v.Type, path, walked)
	case spec.InterfaceType:
		return ""
	case spec.MapType:
		return rt.jsonPath(v.Value, path[1:], append(walked, seg))
	case spec.ArrayType:
		if i, err := strconv.Atoi(seg); err != nil || i < 0 {
			return fmt.Sprintf("%s is an array (%s): the next segment must be an index, such as 0, not %q",
				where(walked), v.RawName, seg)
		}
		return rt.jsonPath(v.Value, path[1:], append(walked, seg))
	case spec.DefineStruct, spec.NestedStruct:
		fields := rt.fields(t, "json")
		next, ok := fields[seg]
		if !ok {
			names := make(map[string]bool, len(fields))
			for name := range fields {
				names[name] = true
			}
			holder := "the request type " + typeName(t)
			if len(walked) > 0 {
				holder = where(walked) + " (" + typeName(t) + ")"
			}
			return fmt.Sprintf("%s has no json field %q%s", holder, seg, listOf(" (its json fields: %s)", names))
		}
		return rt.jsonPath(next, path[1:], append(walked, seg))
	}
	return fmt.Sprintf("%s is of type %s, which has no member %q", where(walked), t.Name(), seg)
}

// fields returns the fields of the struct t that carry a tag of the
// given kind (json, form), by the tag's name, with embedded structs
// without such a tag flattened, as encoding/json and go-zero's httpx do.
// A field whose tag has no name (json:",optional"), or, for json, a field
// without any tag, is named as its Go field.
func (rt route) fields(t spec.Type, kind string) map[string]spec.Type {
	out := make(map[string]spec.Type)
	rt.collect(t, kind, out, make(map[string]bool))
	return out
}

func (rt route) collect(t spec.Type, kind string, out map[string]spec.Type, seen map[string]bool) {
	var members []spec.Member
	switch v := rt.resolve(t).(type) {
	case spec.DefineStruct:
		if seen[v.RawName] {
			return
		}
		seen[v.RawName] = true
		members = v.Members
	case spec.NestedStruct:
		members = v.Members
	default:
		return
	}
	for _, m := range members {
		tag := reflect.StructTag(strings.Trim(m.Tag, "`"))
		value, tagged := tag.Lookup(kind)
		name, _, _ := strings.Cut(value, ",")
		goName := m.Name != "" && !strings.Contains(m.Name, ",")
		switch {
		case name == "-":
		case name != "":
			out[name] = m.Type
		case m.IsInline:
			rt.collect(m.Type, kind, out, seen)
		case goName && (tagged || kind == "json" && m.Tag == ""):
			out[m.Name] = m.Type // json:",optional", or no tag at all
		}
	}
}

// resolve returns the definition of a type named by reference (goctl
// leaves a member's struct type unresolved), through pointers.
func (rt route) resolve(t spec.Type) spec.Type {
	switch v := t.(type) {
	case spec.PointerType:
		return rt.resolve(v.Type)
	case spec.DefineStruct:
		if len(v.Members) == 0 {
			if def, ok := rt.types[v.RawName]; ok {
				return def
			}
		}
	}
	return t
}

// where names the part of the body a walked path leads to.
func where(walked []string) string {
	if len(walked) == 0 {
		return "the body"
	}
	return "json:" + strings.Join(walked, ".")
}

func typeName(t spec.Type) string {
	switch v := t.(type) {
	case spec.DefineStruct:
		return v.RawName
	case spec.NestedStruct:
		return "its nested struct"
	}
	return t.Name()
}

// listOf formats names, sorted, into format, or returns "" for none.
func listOf(format string, names map[string]bool) string {
	if len(names) == 0 {
		return ""
	}
	list := make([]string, 0, len(names))
	for name := range names {
		list = append(list, name)
	}
	sort.Strings(list)
	return fmt.Sprintf(format, strings.Join(list, ", "))
}

// pathVars returns the :name variables of a go-zero route pattern.
func pathVars(pattern string) map[string]bool {
	vars := make(map[string]bool)
	for _, seg := range strings.Split(pattern, "/") {
		if strings.HasPrefix(seg, ":") && len(seg) > 1 {
			vars[seg[1:]] = true
		}
	}
	return vars
}

// isToken reports whether name is an HTTP token (RFC 9110 5.6.2), the
// syntax of a header's name.
func isToken(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// namesCaller reports whether s names the request's caller
// (middleware/rule.go's namesCaller): a claim go-zero's JWT middleware
// verified, or the Authorization header.
func namesCaller(s keyspec.Spec) bool {
	return s.Source == "claim" || s.Source == "header" && strings.EqualFold(s.Name, "Authorization")
}
