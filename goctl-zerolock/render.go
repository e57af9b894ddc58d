package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// renderRules writes rules as the entries of a YAML sequence, each line
// indented by indent, fields in LockRule's order but for Mode, which
// follows Keys; fields at their zero value are left out. The output
// depends on the rules alone, so that a check can compare it byte for
// byte.
func renderRules(rules []rule, indent string) string {
	var b strings.Builder
	for _, r := range rules {
		first := true
		field := func(name, value string) {
			if first {
				b.WriteString(indent + "- ")
				first = false
			} else {
				b.WriteString(indent + "  ")
			}
			b.WriteString(name + ": " + value + "\n")
		}
		field("Method", scalar(r.Method))
		field("Path", scalar(r.Path))
		if len(r.Keys) > 0 {
			field("Keys", flowList(r.Keys))
		}
		if r.Mode != "" {
			field("Mode", scalar(r.Mode))
		}
		if r.Expire != "" {
			field("Expire", scalar(r.Expire))
		}
		if r.Permits != 0 {
			field("Permits", strconv.Itoa(r.Permits))
		}
		if r.Quota != 0 {
			field("Quota", strconv.Itoa(r.Quota))
		}
		if r.Period != "" {
			field("Period", scalar(r.Period))
		}
		if r.RateLimitHeaders {
			field("RateLimitHeaders", "true")
		}
		if r.Retain != "" {
			field("Retain", scalar(r.Retain))
		}
		if r.DisableRenew {
			field("DisableRenew", "true")
		}
		if r.MaxHold != "" {
			field("MaxHold", scalar(r.MaxHold))
		}
		if r.MaxResponseBytes != 0 {
			field("MaxResponseBytes", strconv.FormatInt(r.MaxResponseBytes, 10))
		}
		if len(r.Fingerprint) > 0 {
			field("Fingerprint", flowList(r.Fingerprint))
		}
		if r.RejectCode != 0 {
			field("RejectCode", strconv.Itoa(r.RejectCode))
		}
		if r.Message != "" {
			field("Message", quoted(r.Message))
		}
		if r.Wait != "" {
			field("Wait", scalar(r.Wait))
		}
		if r.SharedKeys {
			field("SharedKeys", "true")
		}
		if r.SkipRouteCheck {
			field("SkipRouteCheck", "true")
		}
	}
	return b.String()
}

// flowList writes a YAML flow sequence: [claim:userId, json:orderId].
func flowList(items []string) string {
	out := make([]string, len(items))
	for i, item := range items {
		out[i] = scalar(item)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// plain matches the strings YAML reads as themselves when written
// unquoted, in a block or a flow sequence: keys such as json:items.0.sku
// or header:Idempotency-Key, paths such as /orders/:id, durations such as
// 24h or 1h30m (the unit keeps them from being numbers).
var plain = regexp.MustCompile(`^(?:[A-Za-z_/][A-Za-z0-9_./:-]*|(?:[0-9][0-9.]*(?:ns|us|µs|ms|s|m|h))+)$`)

// notPlain are the plain words some YAML readers take for a boolean or a
// null (YAML 1.1 included, as gopkg.in/yaml.v2 reads it).
var notPlain = map[string]bool{
	"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true,
	"y": true, "n": true, "null": true,
}

// scalar writes s unquoted where YAML reads it back as the same string,
// double-quoted otherwise.
func scalar(s string) string {
	if plain.MatchString(s) && !notPlain[strings.ToLower(s)] && !strings.HasSuffix(s, ":") {
		return s
	}
	return quoted(s)
}

// quoted writes s as a YAML double-quoted string, whose escapes are a
// superset of JSON's.
func quoted(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}
