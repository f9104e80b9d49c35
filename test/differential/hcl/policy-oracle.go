// Reference oracle for ACL policy documents. Reads one JSON case per line on stdin:
//
//	{"kind": "vault" | "nomad", "text": "<policy>", "checks": [{"path": "secret/x"}]}
//
// and prints one JSON verdict per line: the error (if the policy is refused) or the rules as hashicorp/hcl v1
// parses and decodes them, plus the capabilities each checked path gets.
//
// The parsing is Debian's hcl 1.0.0. Vault 1.21+ uses the v1.0.1-vault-7 fork, whose only behavioural changes
// to parsing are (a) HCL (not JSON) object lists refuse a second `key = ...` item whose key token has the same
// source text and (b) an error inside an object whose next token is `}` is reported instead of dropped. Both are
// detected here on the 1.0.0 syntax tree / token stream and reported as `forkRefuses`, so the test can tell
// which refusals come from the fork.
//
// The validation that follows is written from reading vault/policy.go (parsePaths), vault/acl.go (NewACL,
// AllowOperation, CheckAllowedFromNonExactPaths) and nomad/acl/policy.go; it is not a copy of them.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
	"github.com/hashicorp/hcl/hcl/scanner"
	"github.com/hashicorp/hcl/hcl/token"
	jscanner "github.com/hashicorp/hcl/json/scanner"
	jtoken "github.com/hashicorp/hcl/json/token"
)

type check struct {
	Path string `json:"path"`
	// A request body for an update of the path: the write is decided with the rule's parameter constraints.
	Data json.RawMessage `json:"data,omitempty"`
}

type input struct {
	Kind   string  `json:"kind"`
	Text   string  `json:"text"`
	Checks []check `json:"checks"`
}

type rule struct {
	Path         string                   `json:"path"`
	Capabilities []string                 `json:"capabilities"`
	Allowed      map[string][]interface{} `json:"allowed,omitempty"`
	Denied       map[string][]interface{} `json:"denied,omitempty"`
	Required     []string                 `json:"required,omitempty"`
	caseClash    bool
	globName     string
}

type verdict struct {
	Error       string `json:"error,omitempty"`
	ForkRefuses string `json:"forkRefuses,omitempty"`
	// A repeat Vault (and Nomad) merge but Keyhaven refuses: a key given twice in one object however it is
	// written (HCL or JSON), a path or rule given twice, a path field from two items, a required parameter twice.
	Merged string    `json:"merged,omitempty"`
	Rules  []rule    `json:"rules"`
	Nomad  *nomadOut `json:"nomad,omitempty"`
	// Keys Vault honours that this port refuses by design (wrapping TTLs, MFA, control groups, events).
	Unsupported []string `json:"unsupported,omitempty"`
	// Parameter names differing only in case: Vault keeps one of them at random (Go map order).
	CaseClash bool `json:"caseClash,omitempty"`
	// A parameter name with a `*` that is not the whole name (any `*` in a required name): Vault matches it
	// literally; Keyhaven refuses it (its unmerged #16309 refuses such names too).
	GlobName string     `json:"globName,omitempty"`
	Checks   [][]string `json:"checks"`
	Writes   []bool     `json:"writes"`
}

// pathFields mirrors the fields of a Vault path block, with the hcl tags Vault's decoder uses.
type pathFields struct {
	Policy              string
	Capabilities        []string
	MinWrappingTTL      interface{}              `hcl:"min_wrapping_ttl"`
	MaxWrappingTTL      interface{}              `hcl:"max_wrapping_ttl"`
	AllowedParameters   map[string][]interface{} `hcl:"allowed_parameters"`
	DeniedParameters    map[string][]interface{} `hcl:"denied_parameters"`
	RequiredParameters  []string                 `hcl:"required_parameters"`
	MFAMethods          []string                 `hcl:"mfa_methods"`
	ControlGroup        interface{}              `hcl:"control_group"`
	SubscribeEventTypes []string                 `hcl:"subscribe_event_types"`
}

var legacy = map[string][]string{
	"read":  {"read", "list"},
	"write": {"create", "read", "update", "delete", "list"},
	"sudo":  {"create", "read", "update", "delete", "list", "sudo"},
}

var vaultCaps = map[string]bool{"create": true, "read": true, "update": true, "delete": true, "list": true, "sudo": true, "patch": true, "subscribe": true, "recover": true}

func isJSON(text string) bool {
	for offset := 0; offset < len(text); {
		r, w := utf8.DecodeRuneInString(text[offset:])
		offset += w
		if unicode.IsSpace(r) {
			continue
		}
		return r == '{'
	}
	return false
}

// forkDuplicate reports the first `key = value` item whose key text repeats within one HCL object list.
func forkDuplicate(list *ast.ObjectList) string {
	seen := map[string]bool{}
	for _, item := range list.Items {
		if item.Assign.IsValid() {
			for _, key := range item.Keys {
				if seen[key.Token.Text] {
					return fmt.Sprintf("duplicate %s", key.Token.Text)
				}
				seen[key.Token.Text] = true
			}
		}
		if found := forkDuplicateIn(item.Val); found != "" {
			return found
		}
	}
	return ""
}

func forkDuplicateIn(node ast.Node) string {
	switch n := node.(type) {
	case *ast.ObjectType:
		return forkDuplicate(n.List)
	case *ast.ListType:
		for _, elem := range n.List {
			if found := forkDuplicateIn(elem); found != "" {
				return found
			}
		}
	}
	return ""
}

// keysRepeatedHCL reports the first key sequence (by value: `x` and `"x"` alike) given twice in one object list.
func keysRepeatedHCL(node ast.Node) string {
	switch n := node.(type) {
	case *ast.ObjectList:
		seen := map[string]bool{}
		for _, item := range n.Items {
			names := []string{}
			for _, key := range item.Keys {
				names = append(names, fmt.Sprint(key.Token.Value()))
			}
			id := strings.Join(names, "\x00")
			if seen[id] {
				return "key given twice: " + strings.Join(names, " ")
			}
			seen[id] = true
		}
		for _, item := range n.Items {
			if found := keysRepeatedHCL(item.Val); found != "" {
				return found
			}
		}
	case *ast.ObjectType:
		return keysRepeatedHCL(n.List)
	case *ast.ListType:
		for _, elem := range n.List {
			if found := keysRepeatedHCL(elem); found != "" {
				return found
			}
		}
	}
	return ""
}

// keysRepeatedJSON walks the JSON tokens (hcl's lenient JSON scanner) and reports the first member key given
// twice in one object, before hcl flattens the objects (after which "the same object" is lost).
func keysRepeatedJSON(text string) string {
	s := jscanner.New([]byte(text))
	s.Error = func(jtoken.Pos, string) {}
	type scope struct {
		object bool
		inKey  bool
		keys   []string
		seen   map[string]bool
	}
	stack := []*scope{}
	for {
		tok := s.Scan()
		if tok.Type == jtoken.EOF || tok.Type == jtoken.ILLEGAL {
			return ""
		}
		var top *scope
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok.Type {
		case jtoken.LBRACE:
			stack = append(stack, &scope{object: true, inKey: true, seen: map[string]bool{}})
		case jtoken.LBRACK:
			// hcl's JSON listType ignores a `[` inside a list (no nested lists): the first `]` ends the outer list.
			if top == nil || top.object {
				stack = append(stack, &scope{})
			}
		case jtoken.RBRACE, jtoken.RBRACK:
			// A `}` inside a list is an error hcl drops at the enclosing `}`, discarding the rest: stop there. A `]`
			// inside an object ends the object (hcl's objectList stops at any token other than a comma).
			if top != nil && !top.object && tok.Type == jtoken.RBRACE {
				return ""
			}
			if top != nil {
				stack = stack[:len(stack)-1]
			}
		case jtoken.COMMA:
			if top != nil && top.object {
				top.inKey = true
			}
		case jtoken.COLON:
			if top != nil && top.object && top.inKey {
				id := strings.Join(top.keys, "\x00")
				if top.seen[id] {
					return "member given twice: " + strings.Join(top.keys, " ")
				}
				top.seen[id] = true
				top.keys = nil
				top.inKey = false
			}
		case jtoken.STRING:
			if top != nil && top.object && top.inKey {
				value, err := strconv.Unquote(tok.Text)
				if err != nil {
					value = tok.Text
				}
				top.keys = append(top.keys, value)
			}
		}
	}
}

// assignThenBrace: `=` followed by `}` (comments aside), an error 1.0.0 drops inside an object and the fork reports.
func assignThenBrace(text string) bool {
	s := scanner.New([]byte(text))
	s.Error = func(token.Pos, string) {}
	previous := token.ILLEGAL
	for {
		tok := s.Scan()
		if tok.Type == token.EOF {
			return false
		}
		if tok.Type == token.COMMENT {
			continue
		}
		if previous == token.ASSIGN && tok.Type == token.RBRACE {
			return true
		}
		previous = tok.Type
	}
}

func keyOf(item *ast.ObjectItem, fallback string) string {
	if len(item.Keys) > 0 {
		return item.Keys[0].Token.Value().(string)
	}
	return fallback
}

// checkKeys refuses keys outside the allowed set (case-sensitive, as Vault's and Nomad's key checks are).
func checkKeys(node ast.Node, valid ...string) error {
	var list *ast.ObjectList
	switch n := node.(type) {
	case *ast.ObjectList:
		list = n
	case *ast.ObjectType:
		list = n.List
	default:
		return fmt.Errorf("cannot contain fields")
	}
	for _, item := range list.Items {
		key := keyOf(item, "")
		ok := false
		for _, v := range valid {
			if v == key {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("invalid key %q", key)
		}
	}
	return nil
}

// fieldRepeated reports a path field decoded from more than one item (`x = …` and `x "label" { … }`, or the same
// key written twice), which hcl's decoder merges.
func fieldRepeated(body ast.Node) string {
	list, ok := body.(*ast.ObjectType)
	if !ok {
		return ""
	}
	for _, name := range []string{"comment", "policy", "capabilities", "allowed_parameters", "denied_parameters", "required_parameters",
		"min_wrapping_ttl", "max_wrapping_ttl", "mfa_methods", "control_group", "subscribe_event_types"} {
		direct, nested := 0, 0
		for _, item := range list.List.Filter(name).Items {
			if len(item.Keys) == 0 {
				direct++
			} else {
				nested = 1
			}
		}
		if direct+nested > 1 {
			return "field given twice: " + name
		}
	}
	return ""
}

func parseVault(root *ast.ObjectList, unsupported map[string]bool, merged *string) ([]rule, error) {
	note := func(what string) {
		if *merged == "" {
			*merged = what
		}
	}
	seenPaths := map[string]bool{}
	if err := checkKeys(root, "name", "path"); err != nil {
		return nil, err
	}
	var top struct {
		Name string `hcl:"name"`
	}
	if err := hcl.DecodeObject(&top, root); err != nil {
		return nil, err
	}
	rules := []rule{}
	for _, item := range root.Filter("path").Items {
		key := keyOf(item, "path")
		// identitytpl.PopulateString's validity check: `{{` and `}}` must pair up; a path with them is templated.
		if templated, err := templateCheck(key); err != nil {
			return nil, fmt.Errorf("failed to validate policy templating: %v", err)
		} else if templated {
			unsupported["templated path"] = true
		}
		if err := checkKeys(item.Val, "comment", "policy", "capabilities", "allowed_parameters", "denied_parameters",
			"required_parameters", "min_wrapping_ttl", "max_wrapping_ttl", "mfa_methods", "control_group", "subscribe_event_types"); err != nil {
			return nil, fmt.Errorf("path %q: %v", key, err)
		}
		var fields pathFields
		if err := hcl.DecodeObject(&fields, item.Val); err != nil {
			return nil, fmt.Errorf("path %q: %v", key, err)
		}
		for _, name := range []string{"min_wrapping_ttl", "max_wrapping_ttl", "mfa_methods", "control_group", "subscribe_event_types"} {
			if len(item.Val.(*ast.ObjectType).List.Filter(name).Items) > 0 {
				unsupported[name] = true
			}
		}
		path := strings.TrimPrefix(key, "/")
		if seenPaths[path] {
			note("path given twice: " + path)
		}
		seenPaths[path] = true
		if found := fieldRepeated(item.Val); found != "" {
			note(found)
		}
		seenRequired := map[string]bool{}
		for _, name := range fields.RequiredParameters {
			if seenRequired[strings.ToLower(name)] {
				note("required parameter given twice: " + name)
			}
			seenRequired[strings.ToLower(name)] = true
		}
		if strings.Contains(path, "+*") {
			return nil, fmt.Errorf("path %q: invalid use of wildcards", path)
		}
		capabilities := fields.Capabilities
		if fields.Policy != "" {
			if fields.Policy == "deny" {
				capabilities = []string{"deny"}
			} else if expanded, ok := legacy[fields.Policy]; ok {
				capabilities = append(capabilities, expanded...)
			} else {
				return nil, fmt.Errorf("path %q: invalid policy %q", key, fields.Policy)
			}
		}
		globName := ""
		for _, m := range []map[string][]interface{}{fields.AllowedParameters, fields.DeniedParameters} {
			for name := range m {
				if strings.Contains(name, "*") && name != "*" {
					globName = name
				}
			}
		}
		for _, name := range fields.RequiredParameters {
			if strings.Contains(name, "*") {
				globName = name
			}
		}
		out := rule{Path: path}
		out.globName = globName
		set := map[string]bool{}
		denied := false
		for _, c := range capabilities {
			if c == "deny" {
				denied = true
				break
			}
			if !vaultCaps[c] {
				return nil, fmt.Errorf("path %q: invalid capability %q", key, c)
			}
			set[c] = true
		}
		if denied {
			out.Capabilities = []string{"deny"}
			rules = append(rules, out)
			continue
		}
		for c := range set {
			out.Capabilities = append(out.Capabilities, c)
		}
		sort.Strings(out.Capabilities)
		if out.Capabilities == nil {
			out.Capabilities = []string{}
		}
		var clashA, clashD bool
		out.Allowed, clashA = lower(fields.AllowedParameters)
		out.Denied, clashD = lower(fields.DeniedParameters)
		out.caseClash = clashA || clashD
		if len(fields.RequiredParameters) > 0 {
			out.Required = fields.RequiredParameters
		}
		rules = append(rules, out)
	}
	return rules, nil
}

func templateCheck(path string) (bool, error) {
	pieces := strings.Split(path, "{{")
	if strings.Contains(pieces[0], "}}") {
		return false, fmt.Errorf("unbalanced templating characters")
	}
	for _, piece := range pieces[1:] {
		if len(strings.Split(piece, "}}")) != 2 {
			return false, fmt.Errorf("unbalanced templating characters")
		}
	}
	return len(pieces) > 1, nil
}

// lower keys parameters by their lower-cased name; when two names fold together the later one wins, as
// assigning into Vault's map does. A nil map stays absent, an empty one stays empty.
func lower(in map[string][]interface{}) (map[string][]interface{}, bool) {
	if in == nil {
		return nil, false
	}
	clash := false
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	sort.Strings(names)
	out := map[string][]interface{}{}
	for _, name := range names {
		values := in[name]
		if values == nil {
			values = []interface{}{}
		}
		if _, ok := out[strings.ToLower(name)]; ok {
			clash = true
		}
		out[strings.ToLower(name)] = values
	}
	return out, clash
}

// --- ACL: vault/acl.go NewACL (merging), AllowOperation (lookup, capability and parameter checks) ---

type perms struct {
	caps     map[string]bool
	allowed  map[string][]interface{}
	denied   map[string][]interface{}
	required []string
}

type aclTables struct {
	exact, prefix, segment map[string]*perms
}

func mergeParams(existing, incoming map[string][]interface{}) map[string][]interface{} {
	if len(incoming) == 0 {
		return existing
	}
	if existing == nil {
		out := map[string][]interface{}{}
		for k, v := range incoming {
			out[k] = v
		}
		return out
	}
	for k, v := range incoming {
		old, ok := existing[k]
		if len(v) == 0 || (ok && len(old) == 0) {
			existing[k] = []interface{}{}
		} else {
			existing[k] = append(append([]interface{}{}, v...), old...)
		}
	}
	return existing
}

func buildACL(rules []rule) *aclTables {
	a := &aclTables{exact: map[string]*perms{}, prefix: map[string]*perms{}, segment: map[string]*perms{}}
	for _, r := range rules {
		p := r.Path
		table := a.exact
		if p == "+" || strings.Contains(p, "/+") || strings.HasPrefix(p, "+/") {
			table = a.segment
		} else if strings.HasSuffix(p, "*") {
			table = a.prefix
			p = strings.TrimSuffix(p, "*")
		}
		deny := len(r.Capabilities) == 1 && r.Capabilities[0] == "deny"
		existing, ok := table[p]
		if !ok {
			created := &perms{caps: map[string]bool{}, allowed: mergeParams(nil, r.Allowed), denied: mergeParams(nil, r.Denied), required: append([]string{}, r.Required...)}
			if r.Allowed != nil && created.allowed == nil {
				created.allowed = map[string][]interface{}{}
			}
			for _, c := range r.Capabilities {
				created.caps[c] = true
			}
			table[p] = created
			continue
		}
		if existing.caps["deny"] {
			continue
		}
		if deny {
			existing.caps = map[string]bool{"deny": true}
			existing.allowed, existing.denied = nil, nil
			continue
		}
		for _, c := range r.Capabilities {
			existing.caps[c] = true
		}
		existing.allowed = mergeParams(existing.allowed, r.Allowed)
		existing.denied = mergeParams(existing.denied, r.Denied)
		for _, name := range r.Required {
			found := false
			for _, have := range existing.required {
				found = found || have == name
			}
			if !found {
				existing.required = append(existing.required, name)
			}
		}
	}
	return a
}

// lookup finds the deciding rule as current vault/acl.go's AllowOperation does: exact, a list's exact path without
// its trailing slash, then for a list of "p/" the candidates of "p" and "p/" together (resolveACLPermsForListOp),
// else the most precise candidate.
func (a *aclTables) lookup(path string, list bool) *perms {
	path = strings.TrimLeft(path, "/")
	trimmed := strings.TrimSuffix(path, "/")
	if p, ok := a.exact[path]; ok {
		return p
	}
	if list {
		if p, ok := a.exact[trimmed]; ok {
			return p
		}
		if trimmed != path {
			all := append(candidatesFor(a.prefix, a.segment, trimmed), candidatesFor(a.prefix, a.segment, path)...)
			if len(all) == 0 {
				return nil
			}
			return forList(all)
		}
	}
	return nonExact(a.prefix, a.segment, path)
}

// forList: the most precise deny wins unless a more precise candidate grants list; else the most precise list
// grant; else the most precise candidate.
func forList(all []candidate) *perms {
	var deny, list *candidate
	for i := range all {
		c := &all[i]
		if c.perms.caps["deny"] && (deny == nil || better(*c, *deny)) {
			deny = c
		}
		if c.perms.caps["list"] && (list == nil || better(*c, *list)) {
			list = c
		}
	}
	if deny != nil && (list == nil || better(*deny, *list)) {
		return deny.perms
	}
	if list != nil {
		return list.perms
	}
	return mostPrecise(all)
}

// capabilitiesOf is sys/capabilities: the deciding rule's capabilities for a list-style lookup, or deny.
func capabilitiesOf(a *aclTables, path string) []string {
	found := a.lookup(path, true)
	if found == nil || found.caps["deny"] || len(found.caps) == 0 {
		return []string{"deny"}
	}
	out := []string{}
	for c := range found.caps {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func globMatch(item, val string) bool {
	if len(item) < 2 {
		return val == item
	}
	prefix, suffix := strings.HasPrefix(item, "*"), strings.HasSuffix(item, "*")
	switch {
	case prefix && suffix:
		return strings.Contains(val, item[1:len(item)-1])
	case prefix:
		return strings.HasSuffix(val, item[1:])
	case suffix:
		return strings.HasPrefix(val, item[:len(item)-1])
	}
	return val == item
}

func inList(v interface{}, list []interface{}) bool {
	for _, el := range list {
		if el == nil || v == nil {
			if el == v {
				return true
			}
		} else if s, ok := el.(string); ok {
			if vs, ok := v.(string); ok && globMatch(s, vs) {
				return true
			}
		} else if reflect.DeepEqual(el, v) {
			return true
		}
	}
	return false
}

// commaParts is parseutil.ParseCommaStringSlice for a string: "" is no parts, else the comma-separated parts trimmed.
func commaParts(s string) []interface{} {
	out := []interface{}{}
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(part))
	}
	return out
}

// elementsOf is what Vault 1.21 checks element by element: a list's elements or a string's comma parts.
func elementsOf(v interface{}) ([]interface{}, bool) {
	if list, ok := v.([]interface{}); ok {
		return list, true
	}
	if s, ok := v.(string); ok {
		return commaParts(s), true
	}
	return nil, false
}

func allowedValue(v interface{}, list []interface{}) bool {
	if len(list) == 0 || inList(v, list) {
		return true
	}
	elements, ok := elementsOf(v)
	if !ok {
		return false
	}
	for _, e := range elements {
		if !inList(e, list) {
			return false
		}
	}
	return true
}

func deniedValue(v interface{}, list []interface{}) bool {
	if len(list) == 0 || inList(v, list) {
		return true
	}
	elements, _ := elementsOf(v)
	for _, e := range elements {
		if inList(e, list) {
			return true
		}
	}
	return false
}

// writeAllowed is AllowOperation for an update of path with a request body decoded as Vault decodes it.
func writeAllowed(a *aclTables, path string, data map[string]interface{}) bool {
	p := a.lookup(path, false)
	if p == nil || p.caps["deny"] || !p.caps["update"] {
		return false
	}
	for _, name := range p.required {
		if _, ok := data[strings.ToLower(name)]; !ok {
			return false
		}
	}
	if len(data) == 0 {
		return true
	}
	if len(p.denied) > 0 {
		if _, ok := p.denied["*"]; ok {
			return false
		}
		for name, value := range data {
			if list, ok := p.denied[strings.ToLower(name)]; ok && deniedValue(normalizePolicies(name, value), list) {
				return false
			}
		}
	}
	if len(p.allowed) == 0 {
		return true
	}
	_, all := p.allowed["*"]
	if len(p.allowed) == 1 && all {
		return true
	}
	for name, value := range data {
		list, ok := p.allowed[strings.ToLower(name)]
		if !ok && !all {
			return false
		}
		if ok && !allowedValue(normalizePolicies(name, value), list) {
			return false
		}
	}
	return true
}

// normalizePolicies is current vault/acl.go's normalizePolicyParameterValue: policies and token_policies values are
// lower-cased before they are checked.
func normalizePolicies(name string, value interface{}) interface{} {
	if lower := strings.ToLower(name); lower != "policies" && lower != "token_policies" {
		return value
	}
	switch v := value.(type) {
	case string:
		return strings.ToLower(v)
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, el := range v {
			if s, ok := el.(string); ok {
				out[i] = strings.ToLower(s)
			} else {
				out[i] = el
			}
		}
		return out
	}
	return value
}

type candidate struct {
	first    int
	count    int
	isPrefix bool
	path     string
	perms    *perms
}

func nonExact(prefix, segment map[string]*perms, path string) *perms {
	return mostPrecise(candidatesFor(prefix, segment, path))
}

func mostPrecise(candidates []candidate) *perms {
	if len(candidates) == 0 {
		return nil
	}
	best := candidates[0]
	for _, c := range candidates[1:] {
		if better(c, best) {
			best = c
		}
	}
	return best.perms
}

func candidatesFor(prefix, segment map[string]*perms, path string) []candidate {
	candidates := []candidate{}
	longest := -1
	var longestPerms *perms
	for p, perms := range prefix {
		if strings.HasPrefix(path, p) && len(p) > longest {
			longest, longestPerms = len(p), perms
		}
	}
	if longestPerms != nil {
		candidates = append(candidates, candidate{first: longest, isPrefix: true, path: path[:longest], perms: longestPerms})
	}
	parts := strings.Split(path, "/")
	for full, perms := range segment {
		c := candidate{first: strings.Index(full, "+"), perms: perms}
		trimmed := full
		if strings.HasSuffix(full, "*") {
			c.isPrefix = true
			trimmed = strings.TrimSuffix(full, "*")
		}
		c.path = trimmed
		pattern := strings.Split(trimmed, "/")
		if len(parts) < len(pattern) || (!c.isPrefix && len(parts) != len(pattern)) {
			continue
		}
		matched := true
		for i, seg := range pattern {
			switch {
			case seg == "+":
				c.count++
			case seg == parts[i]:
			case c.isPrefix && i == len(pattern)-1 && strings.HasPrefix(parts[i], seg):
			default:
				matched = false
			}
			if !matched {
				break
			}
		}
		if matched {
			candidates = append(candidates, c)
		}
	}
	return candidates
}

// better: the later first wildcard, then not a prefix, then fewer `+`, then longer, then lexically larger.
func better(a, b candidate) bool {
	if a.first != b.first {
		return a.first > b.first
	}
	if a.isPrefix != b.isPrefix {
		return !a.isPrefix
	}
	if a.count != b.count {
		return a.count < b.count
	}
	if len(a.path) != len(b.path) {
		return len(a.path) > len(b.path)
	}
	return a.path > b.path
}

// --- Nomad (nomad/acl/policy.go Parse, strict) ---

type nomadOut struct {
	Namespaces map[string][]string `json:"namespaces"`
	Simple     map[string]string   `json:"simple"`
	// Rules left with policy "scale" where Nomad's ACL gives it no meaning (agent, node, quota).
	Scale []string `json:"scale,omitempty"`
}

type nomadLabelled struct {
	Name         string `hcl:",key"`
	Policy       string
	Capabilities []string
}

type nomadSimple struct {
	Policy       string
	Capabilities []string
}

type nomadPolicy struct {
	Namespaces  []*nomadLabelled `hcl:"namespace"`
	NodePools   []*nomadLabelled `hcl:"node_pool"`
	HostVolumes []*nomadLabelled `hcl:"host_volume"`
	Agent       *nomadSimple     `hcl:"agent"`
	Node        *nomadSimple     `hcl:"node"`
	Operator    *nomadSimple     `hcl:"operator"`
	Sentinel    *nomadSimple     `hcl:"sentinel"`
	Quota       *nomadSimple     `hcl:"quota"`
	Plugin      *nomadSimple     `hcl:"plugin"`
}

var nomadValidNames = map[string]*regexp.Regexp{
	"namespace":   regexp.MustCompile("^[a-zA-Z0-9-*]{1,128}$"),
	"node_pool":   regexp.MustCompile("^[a-zA-Z0-9-_*]{1,128}$"),
	"host_volume": regexp.MustCompile("^[a-zA-Z0-9-*]{1,128}$"),
}

var nomadCapabilities = map[string]map[string]bool{
	"namespace":   set("deny", "list-jobs", "parse-job", "read-job", "submit-job", "dispatch-job", "read-logs", "read-fs", "alloc-exec", "alloc-node-exec", "alloc-lifecycle", "sentinel-override", "csi-register-plugin", "csi-write-volume", "csi-read-volume", "csi-list-volume", "csi-mount-volume", "host-volume-create", "host-volume-register", "host-volume-read", "host-volume-write", "host-volume-delete", "list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job", "submit-recommendation", "register-job", "revert-job", "deregister-job", "purge-job", "evaluate-job", "plan-job", "tag-job-version", "stable-job", "fail-deployment", "pause-deployment", "promote-deployment", "unblock-deployment", "cancel-deployment", "set-alloc-health-deployment", "gc-allocation", "pause-allocation", "force-periodic-job", "delete-service-registration"),
	"node_pool":   set("delete", "deny", "read", "write"),
	"host_volume": set("deny", "mount-readonly", "mount-readwrite"),
	"operator":    set("deny", "snapshot-save", "license-read", "keyring-rotate", "keyring-read", "keyring-delete"),
	"sentinel":    set("deny", "sentinel-read", "sentinel-submit", "sentinel-delete"),
}

func set(items ...string) map[string]bool {
	out := map[string]bool{}
	for _, item := range items {
		out[item] = true
	}
	return out
}

var nomadRead = []string{"list-jobs", "parse-job", "read-job", "csi-list-volume", "csi-read-volume", "read-job-scaling", "list-scaling-policies", "read-scaling-policy", "host-volume-read"}

func nomadExpand(policy string) []string {
	switch policy {
	case "deny":
		return []string{"deny"}
	case "read":
		return nomadRead
	case "write":
		return append(append([]string{}, nomadRead...), "scale-job", "submit-job", "dispatch-job", "read-logs", "read-fs", "alloc-exec", "alloc-lifecycle", "csi-mount-volume", "csi-write-volume", "submit-recommendation", "host-volume-create")
	case "scale":
		return []string{"list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job", "read-job", "submit-recommendation"}
	}
	return nil
}

var nomadImplied = map[string][]string{
	"host-volume-write":    {"host-volume-register", "host-volume-create", "host-volume-delete", "host-volume-read"},
	"host-volume-register": {"host-volume-create", "host-volume-read"},
	"host-volume-create":   {"host-volume-read"},
}

func validPolicy(policy string) bool {
	return policy == "deny" || policy == "read" || policy == "write" || policy == "scale"
}

func parseNomad(root *ast.ObjectList, text string, merged *string) (*nomadOut, error) {
	if text == "" {
		return &nomadOut{Namespaces: map[string][]string{}, Simple: map[string]string{}}, nil
	}
	// Nomad's strict parse: every key of the top-level items must be a known rule or a rule's name.
	fields := []string{"namespace", "node_pool", "host_volume", "agent", "node", "operator", "sentinel", "quota", "plugin"}
	for _, item := range root.Items {
		known := false
		for _, f := range fields {
			if strings.EqualFold(keyOf(item, ""), f) {
				known = true
			}
		}
		if !known {
			return nil, fmt.Errorf("Invalid or duplicate policy keys: %s", keyOf(item, ""))
		}
		labels := len(item.Keys) - 1
		kind := strings.ToLower(keyOf(item, ""))
		if _, ok := nomadValidNames[kind]; ok {
			if labels > 1 {
				return nil, fmt.Errorf("Invalid or duplicate policy keys: extra label")
			}
		} else if labels > 0 {
			return nil, fmt.Errorf("Invalid or duplicate policy keys: label on %s", kind)
		}
	}
	seenRules := map[string]bool{}
	for _, item := range root.Items {
		names := []string{strings.ToLower(keyOf(item, ""))}
		for _, key := range item.Keys[1:] {
			names = append(names, fmt.Sprint(key.Token.Value()))
		}
		if id := strings.Join(names, "\x00"); seenRules[id] {
			*merged = "rule given twice: " + strings.Join(names, " ")
		} else {
			seenRules[id] = true
		}
	}
	var p nomadPolicy
	if err := hcl.DecodeObject(&p, root); err != nil {
		return nil, err
	}
	// hclDecode: an item without a label has no name.
	for _, group := range []struct {
		kind  string
		rules []*nomadLabelled
	}{{"namespace", p.Namespaces}, {"node_pool", p.NodePools}, {"host_volume", p.HostVolumes}} {
		for i, item := range root.Filter(group.kind).Items {
			if len(item.Keys) == 0 && i < len(group.rules) {
				group.rules[i].Name = ""
			}
		}
	}
	if len(p.Namespaces) == 0 && len(p.NodePools) == 0 && len(p.HostVolumes) == 0 && p.Agent == nil && p.Node == nil &&
		p.Operator == nil && p.Sentinel == nil && p.Quota == nil && p.Plugin == nil {
		return nil, fmt.Errorf("Invalid policy")
	}
	out := &nomadOut{Namespaces: map[string][]string{}, Simple: map[string]string{}}
	for kind, group := range map[string][]*nomadLabelled{"namespace": p.Namespaces, "node_pool": p.NodePools, "host_volume": p.HostVolumes} {
		for _, r := range group {
			if !nomadValidNames[kind].MatchString(r.Name) {
				return nil, fmt.Errorf("Invalid %s name %q", kind, r.Name)
			}
			if r.Policy != "" && !validPolicy(r.Policy) {
				return nil, fmt.Errorf("Invalid %s policy %q", kind, r.Policy)
			}
			for _, c := range r.Capabilities {
				if !nomadCapabilities[kind][c] {
					return nil, fmt.Errorf("Invalid %s capability %q", kind, c)
				}
			}
			if kind != "namespace" {
				continue
			}
			caps := append([]string{}, r.Capabilities...)
			caps = append(caps, nomadExpand(r.Policy)...)
			for _, c := range r.Capabilities {
				caps = append(caps, nomadImplied[c]...)
			}
			out.Namespaces[r.Name] = append(out.Namespaces[r.Name], caps...)
		}
	}
	for name, caps := range out.Namespaces {
		unique := map[string]bool{}
		for _, c := range caps {
			unique[c] = true
		}
		sorted := []string{}
		for c := range unique {
			sorted = append(sorted, c)
		}
		sort.Strings(sorted)
		out.Namespaces[name] = sorted
	}
	for name, s := range map[string]*nomadSimple{"agent": p.Agent, "node": p.Node, "quota": p.Quota} {
		if s != nil && !validPolicy(s.Policy) {
			return nil, fmt.Errorf("Invalid %s policy %q", name, s.Policy)
		}
	}
	if p.Plugin != nil && !(p.Plugin.Policy == "deny" || p.Plugin.Policy == "read" || p.Plugin.Policy == "list" || p.Plugin.Policy == "write") {
		return nil, fmt.Errorf("Invalid plugin policy %q", p.Plugin.Policy)
	}
	for name, s := range map[string]*nomadSimple{"operator": p.Operator, "sentinel": p.Sentinel} {
		if s == nil {
			continue
		}
		if s.Policy != "" && !validPolicy(s.Policy) {
			return nil, fmt.Errorf("Invalid %s policy %q", name, s.Policy)
		}
		for _, c := range s.Capabilities {
			if !nomadCapabilities[name][c] {
				return nil, fmt.Errorf("Invalid %s capability %q", name, c)
			}
		}
	}
	for _, name := range []string{"agent", "node", "quota"} {
		if s := map[string]*nomadSimple{"agent": p.Agent, "node": p.Node, "quota": p.Quota}[name]; s != nil && s.Policy == "scale" {
			out.Scale = append(out.Scale, name)
		}
	}
	for name, s := range map[string]*nomadSimple{"agent": p.Agent, "node": p.Node, "operator": p.Operator} {
		// Only deny, read and write mean anything for these in Nomad's ACL (operator "scale" expands to nothing).
		if s != nil && (s.Policy == "deny" || s.Policy == "read" || s.Policy == "write") {
			out.Simple[name] = s.Policy
		}
	}
	return out, nil
}

// evaluate parses one case; a panic inside hcl (it panics on some malformed string escapes) is a refusal.
func evaluate(c input) (v verdict) {
	v = verdict{Rules: []rule{}, Checks: [][]string{}, Writes: []bool{}}
	defer func() {
		if r := recover(); r != nil {
			v = verdict{Error: fmt.Sprintf("panic: %v", r), Rules: []rule{}, Checks: [][]string{}, Writes: []bool{}}
			for _, ch := range c.Checks {
				v.Checks = append(v.Checks, []string{"deny"})
				if len(ch.Data) > 0 {
					v.Writes = append(v.Writes, false)
				}
			}
		}
	}()
	file, err := hcl.Parse(c.Text)
	if err != nil {
		v.Error = err.Error()
	} else if list, ok := file.Node.(*ast.ObjectList); !ok {
		v.Error = "does not contain a root object"
	} else {
		if !isJSON(c.Text) {
			if dup := forkDuplicate(list); dup != "" {
				v.ForkRefuses = dup
			} else if assignThenBrace(c.Text) {
				v.ForkRefuses = "error before }"
			}
			v.Merged = keysRepeatedHCL(list)
		} else {
			v.Merged = keysRepeatedJSON(c.Text)
		}
		if c.Kind == "nomad" {
			v.Nomad, err = parseNomad(list, c.Text, &v.Merged)
		} else {
			unsupported := map[string]bool{}
			v.Rules, err = parseVault(list, unsupported, &v.Merged)
			for name := range unsupported {
				v.Unsupported = append(v.Unsupported, name)
			}
			sort.Strings(v.Unsupported)
			for _, r := range v.Rules {
				v.CaseClash = v.CaseClash || r.caseClash
				if r.globName != "" {
					v.GlobName = r.globName
				}
			}
		}
		if err != nil {
			v.Error = err.Error()
			v.Rules = []rule{}
			v.Nomad = nil
		}
	}
	tables := buildACL(v.Rules)
	if v.Error != "" {
		tables = buildACL(nil)
	}
	for _, ch := range c.Checks {
		v.Checks = append(v.Checks, capabilitiesOf(tables, ch.Path))
		if len(ch.Data) > 0 {
			decoder := json.NewDecoder(bytes.NewReader(ch.Data))
			decoder.UseNumber()
			var data map[string]interface{}
			if err := decoder.Decode(&data); err != nil {
				panic(err)
			}
			v.Writes = append(v.Writes, writeAllowed(tables, ch.Path, data))
		}
	}
	return v
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		v := evaluate(c)
		if err := out.Encode(v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}
