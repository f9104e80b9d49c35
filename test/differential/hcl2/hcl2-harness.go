// Reads one JSON case per line on stdin ({"expr": "...", "vars": {...}}) and prints one JSON verdict per line:
// Debian's hashicorp/hcl v2 (hclsyntax) evaluating the expression with go-cty's stdlib functions (and go-cty-yaml's
// yamldecode/yamlencode) under the names Nomad's jobspec2/functions.go gives them, and the job file's variables as `var`.
package main

import (
	"bufio"
	"encoding/json"
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
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

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
