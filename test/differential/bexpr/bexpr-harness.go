// Reads one JSON case per line on stdin and prints one JSON verdict per line: Debian's go-bexpr (0.1.2)
// evaluating a selector over a struct shaped like Nomad's ACLAuthClaims, or Go's regexp compiling a pattern.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"

	"github.com/hashicorp/go-bexpr"
)

// Claims is shaped like Nomad's structs.ACLAuthClaims.
type Claims struct {
	Value map[string]string   `bexpr:"value"`
	List  map[string][]string `bexpr:"list"`
}

type input struct {
	Selector *string             `json:"selector"`
	Regex    *string             `json:"regex"`
	Subject  string              `json:"subject"`
	Value    map[string]string   `json:"value"`
	List     map[string][]string `json:"list"`
}

type verdict struct {
	ParseError string `json:"parseError,omitempty"`
	EvalError  string `json:"evalError,omitempty"`
	Result     bool   `json:"result"`
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
		if c.Regex != nil {
			re, err := regexp.Compile(*c.Regex)
			if err != nil {
				v.ParseError = err.Error()
			} else {
				v.Result = re.MatchString(c.Subject)
			}
		} else {
			v = evaluate(*c.Selector, &Claims{Value: c.Value, List: c.List})
		}
		if err := enc.Encode(v); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}

func evaluate(selector string, claims *Claims) (v verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = verdict{EvalError: "panic"}
		}
	}()
	eval, err := bexpr.CreateEvaluatorForType(selector, nil, (*Claims)(nil))
	if err != nil {
		return verdict{ParseError: err.Error()}
	}
	result, err := eval.Evaluate(claims)
	if err != nil {
		return verdict{EvalError: err.Error()}
	}
	return verdict{Result: result}
}
