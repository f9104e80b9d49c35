// Reads one JSON case per line on stdin ({"expr": "...", "vars": {...}}) and prints one JSON verdict per line:
// Debian's hashicorp/hcl v2 (hclsyntax) evaluating the expression with go-cty's stdlib functions (and go-cty-yaml's
// yamldecode/yamlencode) under the names Nomad's jobspec2/functions.go gives them, and the job file's variables as `var`.
// bcrypt and rsadecrypt are go-cty-funcs' crypto functions, which Debian does not ship: their few lines of glue are
// written here after go-cty-funcs' documented behaviour, around the real golang.org/x/crypto/bcrypt, encoding/pem,
// crypto/x509 and crypto/rsa that do the work.
package main

import (
	"bufio"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"github.com/zclconf/go-cty/cty/gocty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"golang.org/x/crypto/bcrypt"
)

// bcryptFunc: bcrypt(str, cost...) hashes str at the cost given (10 when none), one cost at most.
var bcryptFunc = function.New(&function.Spec{
	Params:   []function.Parameter{{Name: "str", Type: cty.String}},
	VarParam: &function.Parameter{Name: "cost", Type: cty.Number},
	Type:     function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		cost := 10
		if len(args) > 1 {
			if err := gocty.FromCtyValue(args[1], &cost); err != nil {
				return cty.UnknownVal(cty.String), err
			}
		}
		if len(args) > 2 {
			return cty.UnknownVal(cty.String), errors.New("bcrypt() takes no more than two arguments")
		}
		hash, err := bcrypt.GenerateFromPassword([]byte(args[0].AsString()), cost)
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("error occured generating password %s", err)
		}
		return cty.StringVal(string(hash)), nil
	},
})

// rsaDecryptFunc: rsadecrypt(ciphertext, privatekey), the ciphertext base64, the key a PKCS #1 PEM block.
var rsaDecryptFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "ciphertext", Type: cty.String}, {Name: "privatekey", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		ciphertext, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("failed to decode input %q: cipher text must be base64-encoded", args[0].AsString())
		}
		block, _ := pem.Decode([]byte(args[1].AsString()))
		if block == nil {
			return cty.UnknownVal(cty.String), errors.New("failed to parse key: no key found")
		}
		if block.Headers["Proc-Type"] == "4,ENCRYPTED" {
			return cty.UnknownVal(cty.String), errors.New("failed to parse key: password protected keys are not supported. Please decrypt the key prior to use")
		}
		key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		plain, err := rsa.DecryptPKCS1v15(nil, key, ciphertext)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(string(plain)), nil
	},
})

type input struct {
	Expr string          `json:"expr"`
	Vars json.RawMessage `json:"vars"`
}

type verdict struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

var functions = map[string]function.Function{
	"abs": stdlib.AbsoluteFunc, "can": tryfunc.CanFunc, "ceil": stdlib.CeilFunc, "chomp": stdlib.ChompFunc,
	"chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc,
	"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
	"convert":   typeexpr.ConvertFunc,
	"csvdecode": stdlib.CSVDecodeFunc, "distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc,
	"flatten": stdlib.FlattenFunc, "floor": stdlib.FloorFunc, "format": stdlib.FormatFunc,
	"formatdate": stdlib.FormatDateFunc, "formatlist": stdlib.FormatListFunc, "indent": stdlib.IndentFunc,
	"index": stdlib.IndexFunc, "join": stdlib.JoinFunc, "jsondecode": stdlib.JSONDecodeFunc,
	"jsonencode": stdlib.JSONEncodeFunc, "keys": stdlib.KeysFunc, "length": stdlib.LengthFunc, "log": stdlib.LogFunc,
	"lookup": stdlib.LookupFunc, "lower": stdlib.LowerFunc, "max": stdlib.MaxFunc, "merge": stdlib.MergeFunc,
	"min": stdlib.MinFunc, "parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc, "range": stdlib.RangeFunc,
	"reverse": stdlib.ReverseFunc, "replace": stdlib.ReplaceFunc, "regex_replace": stdlib.RegexReplaceFunc,
	"setintersection": stdlib.SetIntersectionFunc, "setproduct": stdlib.SetProductFunc,
	"setunion": stdlib.SetUnionFunc, "signum": stdlib.SignumFunc, "slice": stdlib.SliceFunc, "sort": stdlib.SortFunc,
	"split": stdlib.SplitFunc, "strlen": stdlib.StrlenFunc, "strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc,
	"timeadd": stdlib.TimeAddFunc, "title": stdlib.TitleFunc, "trim": stdlib.TrimFunc,
	"trimprefix": stdlib.TrimPrefixFunc, "trimspace": stdlib.TrimSpaceFunc, "trimsuffix": stdlib.TrimSuffixFunc,
	"try": tryfunc.TryFunc, "upper": stdlib.UpperFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
	"yamldecode": ctyyaml.YAMLDecodeFunc, "yamlencode": ctyyaml.YAMLEncodeFunc,
	"bcrypt": bcryptFunc, "rsadecrypt": rsaDecryptFunc,
}

func evaluate(c input) (out verdict) {
	defer func() {
		if r := recover(); r != nil {
			out = verdict{Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	vars := cty.EmptyObjectVal
	if len(c.Vars) > 0 && string(c.Vars) != "null" {
		t, err := ctyjson.ImpliedType(c.Vars)
		if err != nil {
			return verdict{Error: err.Error()}
		}
		vars, err = ctyjson.Unmarshal(c.Vars, t)
		if err != nil {
			return verdict{Error: err.Error()}
		}
	}
	expr, diags := hclsyntax.ParseExpression([]byte(c.Expr), "case.hcl", hcl.Pos{Line: 1, Column: 1, Byte: 0})
	if diags.HasErrors() {
		return verdict{Error: diags.Error()}
	}
	ctx := &hcl.EvalContext{Functions: functions, Variables: map[string]cty.Value{"var": vars}}
	value, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return verdict{Error: diags.Error()}
	}
	if !value.IsWhollyKnown() {
		return verdict{Error: "unknown value"}
	}
	b, err := json.Marshal(ctyjson.SimpleJSONValue{Value: value})
	if err != nil {
		return verdict{Error: err.Error()}
	}
	return verdict{Result: b}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		b, _ := json.Marshal(evaluate(c))
		out.Write(b)
		out.WriteString("\n")
	}
}
