// Which of Vault's HTTP routes answers a path, as Go's own net/http.ServeMux decides it: the routes Vault registers
// with handleLogicalWithInjector (injectDataIntoTopRoutes in Vault's http/handler.go, the list as data) beside its
// catch-all "/v1/sys/" and "/v1/". Reads one JSON string (a request path) per line, prints {"pattern", "injected"}.
package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
)

var injectDataIntoTopRoutes = []string{
	"/v1/sys/audit",
	"/v1/sys/audit/",
	"/v1/sys/audit-hash/",
	"/v1/sys/auth",
	"/v1/sys/auth/",
	"/v1/sys/config/cors",
	"/v1/sys/config/auditing/request-headers/",
	"/v1/sys/config/auditing/request-headers",
	"/v1/sys/capabilities",
	"/v1/sys/capabilities-accessor",
	"/v1/sys/capabilities-self",
	"/v1/sys/ha-status",
	"/v1/sys/key-status",
	"/v1/sys/mounts",
	"/v1/sys/mounts/",
	"/v1/sys/policy",
	"/v1/sys/policy/",
	"/v1/sys/rekey/backup",
	"/v1/sys/rekey/recovery-key-backup",
	"/v1/sys/remount",
	"/v1/sys/rotate",
	"/v1/sys/wrapping/wrap",
}

func main() {
	mux := http.NewServeMux()
	injected := map[string]bool{}
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, route := range injectDataIntoTopRoutes {
		mux.Handle(route, noop)
		injected[route] = true
	}
	mux.Handle("/v1/sys/", noop)
	mux.Handle("/v1/", noop)

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var path string
		if err := json.Unmarshal(in.Bytes(), &path); err != nil {
			panic(err)
		}
		request, err := http.NewRequest("GET", "http://vault"+path, nil)
		if err != nil {
			panic(err)
		}
		_, pattern := mux.Handler(request)
		if err := out.Encode(map[string]interface{}{"pattern": pattern, "injected": injected[pattern]}); err != nil {
			panic(err)
		}
	}
}
