package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/zeromicro/go-zero/tools/goctl/api/spec"

	"github.com/zerolock/zerolock/internal/keyspec"
)

// jwtKey is the @server property that puts a group behind go-zero's JWT
// middleware, whose claims claim: keys read.
const jwtKey = "jwt"

// middlewareKey is the @server property that names a group's middlewares.
const middlewareKey = "middleware"

// collectRules builds the rules the routes of api declare in their @doc
// properties, in the order the routes are written in apiFile and the
// files it imports, and checks them. The error lists every problem, each
// on a line of its own that starts with the file and line it is about.
func collectRules(api *spec.ApiSpec, apiFile string, show func(string) string) ([]rule, error) {
	sites, order, err := locate(apiFile, show)
	if err != nil {
		return nil, err
	}
	types := namedTypes(api)
	rules := make(map[string]rule)
	var report []located
	for _, g := range api.Service.Groups {
		prefix := g.Annotation.Properties[spec.RoutePrefixKey]
		for _, r := range g.Routes {
			if !hasLockProperties(r.AtDoc.Properties) {
				continue
			}
			id := routeID(prefix, r.Method, r.Path)
			st, ok := sites[id]
			if !ok {
				return nil, fmt.Errorf("goctl-zerolock: route %s %s is in goctl's spec but not in the files "+
					"read from %s", strings.ToUpper(r.Method), r.Path, show(apiFile))
			}
			ru := rule{Method: strings.ToUpper(r.Method), Path: fullPath(prefix, r.Path)}
			rt := route{path: ru.Path, jwt: g.Annotation.Properties[jwtKey] != "", request: r.RequestType, types: types}
			ru, problems := ruleOf(r.AtDoc.Properties, ru, rt)
			if g.Annotation.Properties[middlewareKey] == "" {
				ru.unguarded = st.at(st.docLine)
			}
			place := func(line int, msg string) {
				report = append(report, located{route: slices.Index(order, id), line: line,
					text: fmt.Sprintf("%s: %s %s: %s", st.at(line), ru.Method, ru.Path, msg)})
			}
			for _, p := range problems {
				place(st.propLine(p.property), p.msg)
			}
			if st.twice != "" && isLockProperty(st.twice) {
				place(st.twiceLine, fmt.Sprintf("%s is written twice in this @doc (goctl keeps the last)", st.twice))
			}
			rules[id] = ru
		}
	}
	if len(report) > 0 {
		sort.SliceStable(report, func(i, j int) bool {
			if report[i].route != report[j].route {
				return report[i].route < report[j].route
			}
			return report[i].line < report[j].line
		})
		texts := make([]string, len(report))
		for i, l := range report {
			texts[i] = l.text
		}
		return nil, errors.New(strings.Join(texts, "\n"))
	}
	var out []rule
	for _, id := range order {
		if ru, ok := rules[id]; ok {
			out = append(out, ru)
		}
	}
	return out, nil
}

// located is a problem placed in the .api files.
type located struct {
	route int // the route's place in the files
	line  int
	text  string
}

// ruleOf builds a route's rule from its @doc properties onto ru (Method
// and Path set) and checks it, keys included.
func ruleOf(props map[string]string, ru rule, rt route) (rule, []problem) {
	parsed, problems := parseProperties(props)
	parsed.Method, parsed.Path = ru.Method, ru.Path
	keys, keyProblems := checkKeys(keysProperty, parsed.Keys, rt)
	problems = append(problems, keyProblems...)
	_, fpProblems := checkKeys("lockFingerprint", parsed.Fingerprint, rt)
	problems = append(problems, fpProblems...)
	if msg := checkCaller(parsed, keys); msg != "" && len(keyProblems) == 0 {
		problems = append(problems, problem{"lockMode", msg})
	}
	return parsed, problems
}

// checkCaller refuses a replay rule none of whose keys names its caller,
// as the middleware does at start-up (internal/guard's checkCaller), unless
// lockSharedKeys says the keys are shared on purpose. A LockConf-wide
// SharedKeys is not seen here: such a service says lockSharedKeys on the
// route too.
func checkCaller(r rule, keys []keyspec.Spec) string {
	if r.Mode != modeReplay || r.SharedKeys || slices.ContainsFunc(keys, namesCaller) {
		return ""
	}
	return "none of this rule's keys names the caller, so replay mode would hand the result stored for one " +
		"caller to any other who sends the same key: add " + callerKeys + " to lock, or set " +
		`lockSharedKeys: "true" if these keys are shared by different callers on purpose`
}

// shower returns the function that names a file in messages: relative to
// dir (goctl's -dir) when inside it, else absolute.
func shower(dir string) func(string) string {
	return func(name string) string {
		if rel, err := filepath.Rel(dir, name); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
		return name
	}
}
