#!/bin/sh
# Installs the Debian packages the test suite runs against, when missing: OpenLDAP's slapd (tests start their
# own isolated instance, no system one is created), Debian's chromium (the console's browser tests drive it with
# playwright-core; no browser download), Go with HashiCorp's go-bexpr, hcl (v1 and v2, with go-cty and go-cty-yaml) and hil libraries and go-glob (the
# reference parsers the differential tests use as oracles), python3-hvac (an unmodified Vault client) and MariaDB with
# its HashiCorp key-management plugin (a real Vault consumer: the clients test starts its own private mariadbd; the
# package's system service is not used and, where apt's policy lets it start, listens on localhost only).
# Safe to run repeatedly and concurrently.
set -eu
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
gosrc=/usr/share/gocode/src/github.com/hashicorp
if have slapd && have slapadd && have chromium && have ldapsearch && have openssl && have go \
  && [ -d "$gosrc/go-bexpr" ] && [ -d "$gosrc/hcl" ] && [ -d "$gosrc/hcl/v2" ] && [ -d "$gosrc/hil" ] \
  && [ -d /usr/share/gocode/src/github.com/zclconf/go-cty/cty/function/stdlib ] \
  && [ -d /usr/share/gocode/src/github.com/zclconf/go-cty-yaml ] \
  && [ -d /usr/share/gocode/src/github.com/ryanuber/go-glob ] \
  && /usr/bin/python3 -c 'import hvac' >/dev/null 2>&1 \
  && have mariadbd && have mariadb && [ -f /usr/lib/mysql/plugin/hashicorp_key_management.so ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo -n"; fi
export DEBIAN_FRONTEND=noninteractive
echo 'slapd slapd/no_configuration boolean true' | $SUDO debconf-set-selections
packages="slapd ldap-utils openssl chromium golang-go golang-github-hashicorp-go-bexpr-dev golang-github-hashicorp-hcl-dev golang-github-hashicorp-hcl-v2-dev golang-github-zclconf-go-cty-dev golang-github-zclconf-go-cty-yaml-dev golang-github-hashicorp-hil-dev golang-github-ryanuber-go-glob-dev python3-hvac mariadb-server mariadb-plugin-hashicorp-key-management"
# apt takes its own lock; wait for it rather than fail when another installer runs.
# shellcheck disable=SC2086
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends $packages ||
  { $SUDO apt-get -o DPkg::Lock::Timeout=300 update && $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends $packages; }
