// Reference oracle for packages/core/src/scheduler/acl/closest-glob.ts: which glob rule Nomad's ACL applies to a
// name (acl/acl.go findAllMatchingWildcards and findClosestMatchingGlob), rebuilt from Go's own parts: the globs in
// byte order (the order Nomad's radix tree walks them), github.com/ryanuber/go-glob (Debian's
// golang-github-ryanuber-go-glob-dev) to match, the score len(name) - len(glob) + stars, and Go's sort.SliceStable
// with the comparison `<=`. Reads {"globs": [...], "name": "..."} per line, prints {"winner": "...", "found": bool}.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"sort"
	"strings"

	glob "github.com/ryanuber/go-glob"
)

type input struct {
	Globs []string `json:"globs"`
	Name  string   `json:"name"`
}

type verdict struct {
	Winner string `json:"winner"`
	Found  bool   `json:"found"`
}

type scored struct {
	name       string
	difference int
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
		globs := append([]string(nil), c.Globs...)
		sort.Strings(globs)
		var matches []scored
		for _, k := range globs {
			if glob.Glob(k, c.Name) {
				matches = append(matches, scored{k, len(c.Name) - len(k) + strings.Count(k, "*")})
			}
		}
		if len(matches) == 0 {
			_ = out.Encode(verdict{})
			continue
		}
		sort.SliceStable(matches, func(i, j int) bool { return matches[i].difference <= matches[j].difference })
		_ = out.Encode(verdict{Winner: matches[0].name, Found: true})
	}
}
