// Reference oracle for packages/core/src/lib/glob.ts: github.com/ryanuber/go-glob (Debian's
// golang-github-ryanuber-go-glob-dev, v1.0.0), the matcher Vault and Nomad use. Reads one JSON case per line on
// stdin, {"pattern": "...", "subject": "..."}, and prints one JSON verdict per line, {"match": true|false}.
package main

import (
	"bufio"
	"encoding/json"
	"os"

	glob "github.com/ryanuber/go-glob"
)

type input struct {
	Pattern string `json:"pattern"`
	Subject string `json:"subject"`
}

type verdict struct {
	Match bool `json:"match"`
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
		out.Encode(verdict{Match: glob.Glob(c.Pattern, c.Subject)})
	}
}
