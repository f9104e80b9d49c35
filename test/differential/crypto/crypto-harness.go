// Reads one JSON case per line on stdin and prints one JSON verdict per line, with Debian's golang.org/x/crypto/bcrypt
// and Go's crypto/rsa:
// {"check": {"hash": "...", "password": "..."}} answers whether the password matches and the hash's cost;
// {"make": {"password": "...", "cost": 4}} answers a hash Go made;
// {"encrypt": {"key": "<PKCS #1 public key PEM>", "message": "<base64>"}} answers rsa.EncryptPKCS1v15's ciphertext, base64.
package main

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"golang.org/x/crypto/bcrypt"
)

type pair struct {
	Hash     string `json:"hash"`
	Password string `json:"password"`
	Cost     int    `json:"cost"`
}

type message struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

type input struct {
	Check   *pair    `json:"check"`
	Make    *pair    `json:"make"`
	Encrypt *message `json:"encrypt"`
}

type verdict struct {
	Match      bool   `json:"match"`
	Cost       int    `json:"cost"`
	Hash       string `json:"hash,omitempty"`
	Ciphertext string `json:"ciphertext,omitempty"`
	Error      string `json:"error,omitempty"`
}

func encrypt(m message) (string, error) {
	block, _ := pem.Decode([]byte(m.Key))
	if block == nil {
		return "", errors.New("no PEM block")
	}
	key, err := x509.ParsePKCS1PublicKey(block.Bytes)
	if err != nil {
		return "", err
	}
	plain, err := base64.StdEncoding.DecodeString(m.Message)
	if err != nil {
		return "", err
	}
	out, err := rsa.EncryptPKCS1v15(rand.Reader, key, plain)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(out), nil
}

func answer(c input) verdict {
	if c.Encrypt != nil {
		ciphertext, err := encrypt(*c.Encrypt)
		if err != nil {
			return verdict{Error: err.Error()}
		}
		return verdict{Ciphertext: ciphertext}
	}
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
