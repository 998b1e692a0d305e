#!/usr/bin/env bash
# testpkgs.sh unit|server: the packages of the module in the working
# directory whose tests need no API server (unit) or need one (server).
#
# A package needs the server when it, or its tests, import herald's test
# environment (internal/testing/testenv, which starts a kube-apiserver), or
# when it is that package. The split is read from the import graph, not
# from a list, so a new package that starts a server cannot land among the
# unit tests unnoticed: `make test` runs the unit packages with
# HERALD_KUBE_APISERVER pointing at no file, and `make compat` runs them on
# a copy of the tree that has no bin/.
set -eu -o pipefail

GO=${GO:-go}
testenv=github.com/heraldk8s/herald/internal/testing/testenv

case ${1:-} in
unit | server) ;;
*)
	echo "usage: testpkgs.sh unit|server" >&2
	exit 2
	;;
esac

# One line per package and per test variant: "path|1" when it depends on
# testenv. Test variants ("p [p.test]", external "p_test [p.test]") are
# counted for the package they test.
all=$($GO list -f '{{.ImportPath}}' ./...)
server=$($GO list -test -f '{{if .ForTest}}{{.ForTest}}{{else}}{{.ImportPath}}{{end}}|{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./... |
	awk -F'|' -v t="$testenv" '{
		n = split($2, deps, " ")
		for (i = 1; i <= n; i++) if (deps[i] == t) { print $1; next }
	}' | sort -u)
for p in $all; do
	needs=false
	if [ "$p" = "$testenv" ] || grep -qxF "$p" <<<"$server"; then
		needs=true
	fi
	if { [ "$1" = server ] && $needs; } || { [ "$1" = unit ] && ! $needs; }; then
		echo "$p"
	fi
done
