// Reads one JSON case per line on stdin and prints one JSON verdict per line, with Debian's golang.org/x/crypto/bcrypt:
// {"check": {"hash": "...", "password": "..."}} answers whether the password matches and the hash's cost;
// {"make": {"password": "...", "cost": 4}} answers a hash Go made.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"golang.org/x/crypto/bcrypt"
)

type pair struct {
	Hash     string `json:"hash"`
	Password string `json:"password"`
	Cost     int    `json:"cost"`
}

type input struct {
	Check *pair `json:"check"`
	Make  *pair `json:"make"`
}

type verdict struct {
	Match bool   `json:"match"`
	Cost  int    `json:"cost"`
	Hash  string `json:"hash,omitempty"`
	Error string `json:"error,omitempty"`
}

func answer(c input) verdict {
	if c.Make != nil {
		hash, err := bcrypt.GenerateFromPassword([]byte(c.Make.Password), c.Make.Cost)
		if err != nil {
			return verdict{Error: err.Error()}
		}
		return verdict{Hash: string(hash)}
	}
	cost, err := bcrypt.Cost([]byte(c.Check.Hash))
	if err != nil {
		return verdict{Error: err.Error()}
	}
	match := bcrypt.CompareHashAndPassword([]byte(c.Check.Hash), []byte(c.Check.Password)) == nil
	return verdict{Match: match, Cost: cost}
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
		b, _ := json.Marshal(answer(c))
		out.Write(b)
		out.WriteString("\n")
	}
}
