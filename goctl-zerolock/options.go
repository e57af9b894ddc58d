package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/zeromicro/go-zero/tools/goctl/util/format"
)

// options are the plugin's flags: the ARGS of
// goctl api plugin -plugin goctl-zerolock="ARGS".
type options struct {
	// yaml is the service's YAML, whose marked block gets the rules;
	// relative to goctl's -dir. Its default is the file goctl api go
	// writes: etc/<service>.yaml.
	yaml string
	// out, when set, is a file for the rules alone, as a YAML fragment,
	// instead; relative to goctl's -dir.
	out string
	// check compares instead of writing, and fails when they differ.
	check bool
}

const usage = `goctl-zerolock writes the Lock.Rules of a go-zero service's YAML from
the lock properties of its .api routes' @doc blocks. goctl runs it:

  goctl api plugin -plugin goctl-zerolock="-yaml etc/api.yaml" -api x.api -dir .

Flags (paths relative to goctl's -dir):
`

// parseOptions parses the plugin's arguments. It returns flag.ErrHelp for
// -h, after printing the usage to w.
func parseOptions(args []string, w io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("goctl-zerolock", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.StringVar(&o.yaml, "yaml", "", "the service's YAML: the rules go between its lines\n"+
		"\""+beginMarker+"\" and \""+endMarker+"\"\n(default etc/<service>.yaml, as goctl api go names it)")
	fs.StringVar(&o.out, "o", "", "write the rules alone to this file, as a YAML fragment, instead")
	fs.BoolVar(&o.check, "check", false, "write nothing; fail, naming the first differing line,\n"+
		"when the file's rules are not those the .api declares (for CI)")
	fs.Usage = func() {
		fmt.Fprint(w, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("goctl-zerolock: unexpected argument %q (flags: -yaml FILE, -o FILE, -check)", fs.Arg(0))
	}
	if o.yaml != "" && o.out != "" {
		return options{}, errors.New("goctl-zerolock: -yaml and -o name two outputs: give one")
	}
	return o, nil
}

// target is the file the plugin writes or checks, absolute, and whether
// it is a fragment (-o) rather than a service's YAML.
func (o options) target(dir, service, style string) (string, bool, error) {
	name, fragment := o.yaml, false
	switch {
	case o.out != "":
		name, fragment = o.out, true
	case name == "":
		if style == "" {
			style = "gozero" // goctl's default, which it does not pass to plugins
		}
		base, err := format.FileNamingFormat(style, service)
		if err != nil {
			return "", false, fmt.Errorf("goctl-zerolock: the YAML's name from the service %q and style %q: %w; give -yaml",
				service, style, err)
		}
		name = filepath.Join("etc", base+".yaml")
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	return name, fragment, nil
}
