// Reads one JSON case per line on stdin and prints one JSON verdict per line: Debian's hashicorp/hil
// interpolating a template the way Nomad's lib/auth/binder.go InterpolateHIL does (string variables, optionally
// lowercased, a template without "${" used as written, any non-string result an error).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hil"
	"github.com/hashicorp/hil/ast"
)

type input struct {
	Template  string            `json:"template"`
	Vars      map[string]string `json:"vars"`
	Lowercase bool              `json:"lowercase"`
}

type verdict struct {
	Result *string `json:"result,omitempty"`
	Error  string  `json:"error,omitempty"`
}

func interpolate(s string, vars map[string]string, lowercase bool) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	if !strings.Contains(s, "${") {
		return s, nil
	}
	tree, err := hil.Parse(s)
	if err != nil {
		return "", err
	}
	vm := make(map[string]ast.Variable)
	for k, v := range vars {
		if lowercase {
			v = strings.ToLower(v)
		}
		vm[k] = ast.Variable{Type: ast.TypeString, Value: v}
	}
	result, err := hil.Eval(tree, &hil.EvalConfig{GlobalScope: &ast.BasicScope{VarMap: vm}})
	if err != nil {
		return "", err
	}
	if result.Type != hil.TypeString {
		return "", fmt.Errorf("generated unexpected hil type: %s", result.Type)
	}
	return result.Value.(string), nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			panic(err)
		}
		var v verdict
		result, err := interpolate(c.Template, c.Vars, c.Lowercase)
		if err != nil {
			v.Error = err.Error()
		} else {
			v.Result = &result
		}
		if err := enc.Encode(v); err != nil {
			panic(err)
		}
	}
}
