// Reference oracle for packages/core/src/lib/go-strings.ts. Reads one JSON case per line on stdin:
//
//	{"op": "table"} | {"op": "lower" | "upper" | "trim" | "unquote" | "fold" | "parsebool", "text": "<string>"}
//
// and prints one JSON verdict per line. "table" answers every code point whose unicode.ToLower or
// unicode.ToUpper is not itself, and every code point for which unicode.IsSpace holds; the others apply
// strings.ToLower, strings.ToUpper, strings.TrimSpace, strconv.Unquote, strings.EqualFold or strconv.ParseBool to the text.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"unicode"
)

type input struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

type table struct {
	Version string    `json:"version"`
	Cased   [][3]rune `json:"cased"`
	Folds   [][2]rune `json:"folds"`
	Spaces  []rune    `json:"spaces"`
}

type verdict struct {
	Out   string `json:"out"`
	Error bool   `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			panic(err)
		}
		switch c.Op {
		case "table":
			t := table{Version: unicode.Version, Cased: [][3]rune{}, Folds: [][2]rune{}, Spaces: []rune{}}
			for r := rune(0); r <= unicode.MaxRune; r++ {
				if l, u := unicode.ToLower(r), unicode.ToUpper(r); l != r || u != r {
					t.Cased = append(t.Cased, [3]rune{r, l, u})
				}
				if f := unicode.SimpleFold(r); f != r {
					t.Folds = append(t.Folds, [2]rune{r, f})
				}
				if unicode.IsSpace(r) {
					t.Spaces = append(t.Spaces, r)
				}
			}
			out.Encode(t)
		case "lower":
			out.Encode(verdict{Out: strings.ToLower(c.Text)})
		case "upper":
			out.Encode(verdict{Out: strings.ToUpper(c.Text)})
		case "fold":
			parts := strings.SplitN(c.Text, "\x00", 2)
			out.Encode(verdict{Out: strconv.FormatBool(strings.EqualFold(parts[0], parts[1]))})
		case "trim":
			out.Encode(verdict{Out: strings.TrimSpace(c.Text)})
		case "parsebool":
			b, err := strconv.ParseBool(c.Text)
			out.Encode(verdict{Out: strconv.FormatBool(b), Error: err != nil})
		case "unquote":
			s, err := strconv.Unquote(c.Text)
			out.Encode(verdict{Out: s, Error: err != nil})
		default:
			panic("unknown op " + c.Op)
		}
	}
}
