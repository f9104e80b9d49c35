#!/bin/sh
# Installs OpenLDAP's slapd and ldap-utils when missing, without creating a system instance
# (the tests start their own, isolated one). Safe to run repeatedly and concurrently.
set -eu
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if have slapd && have slapadd && have ldapsearch && have openssl; then exit 0; fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo -n"; fi
export DEBIAN_FRONTEND=noninteractive
echo 'slapd slapd/no_configuration boolean true' | $SUDO debconf-set-selections
# apt takes its own lock; wait for it rather than fail when another installer runs.
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends slapd ldap-utils openssl ||
  { $SUDO apt-get -o DPkg::Lock::Timeout=300 update && $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends slapd ldap-utils openssl; }
