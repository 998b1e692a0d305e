// Command kube-apiserver is the API server that herald's integration tests
// run against: an embedded etcd and the real kube-apiserver
// (k8s.io/kubernetes/cmd/kube-apiserver/app) in one process, serving on
// loopback only.
//
// Usage:
//
//	kube-apiserver --embedded-etcd-dir=DIR [--embedded-etcd-client-port=N]
//	    [--embedded-etcd-peer-port=N] [kube-apiserver flags...]
//
// The --embedded-etcd-* flags belong to this wrapper and may appear anywhere
// on the command line; every other argument is passed on to kube-apiserver
// unchanged, followed by --etcd-servers pointing at the embedded etcd. A port
// of 0 (the default) means "pick a free loopback port". The wrapper also
// forces --bind-address=127.0.0.1 unless the caller gave a loopback
// --bind-address, so the server never listens on a public interface.
//
// On SIGTERM or SIGINT kube-apiserver shuts down gracefully (a second signal
// exits at once), then etcd is stopped and the process exits with the API
// server's exit code.
//
// The version pairing (k8s.io/kubernetes v1.36.3 with v0.36.3 staging
// modules, not 1.37) is explained in go.mod.
package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // for timeZone support in CronJob, as upstream's main does

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream's main does
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream's main does
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream's main does
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// etcdStartTimeout bounds how long the embedded etcd may take to become ready.
const etcdStartTimeout = 60 * time.Second

// wrapperFlags are the flags this wrapper consumes itself.
type wrapperFlags struct {
	etcdDir    string
	clientPort int
	peerPort   int
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	wf, apiArgs, err := splitArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver:", err)
		return 2
	}

	// Build the command first: NewAPIServerCommand installs the SIGTERM/SIGINT
	// handler, so a signal that arrives while etcd starts already cancels the
	// API server's context.
	command := app.NewAPIServerCommand()

	etcd, clientURL, err := startEtcd(wf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver: starting embedded etcd:", err)
		return 1
	}
	defer etcd.Close()

	command.SetArgs(append(apiArgs, "--etcd-servers="+clientURL))
	code := cli.Run(command)
	return code
}

// splitArgs separates the wrapper's --embedded-etcd-* flags from the
// kube-apiserver arguments and enforces a loopback bind address.
func splitArgs(args []string) (wrapperFlags, []string, error) {
	var wf wrapperFlags
	var rest []string
	sawBind := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !strings.HasPrefix(arg, "-") {
			rest = append(rest, arg)
			continue
		}
		switch name {
		case "embedded-etcd-dir", "embedded-etcd-client-port", "embedded-etcd-peer-port":
			if !hasValue {
				if i+1 >= len(args) {
					return wf, nil, fmt.Errorf("flag --%s needs a value", name)
				}
				i++
				value = args[i]
			}
			switch name {
			case "embedded-etcd-dir":
				wf.etcdDir = value
			case "embedded-etcd-client-port", "embedded-etcd-peer-port":
				port, err := strconv.Atoi(value)
				if err != nil || port < 0 || port > 65535 {
					return wf, nil, fmt.Errorf("flag --%s: invalid port %q", name, value)
				}
				if name == "embedded-etcd-client-port" {
					wf.clientPort = port
				} else {
					wf.peerPort = port
				}
			}
		case "etcd-servers":
			return wf, nil, fmt.Errorf("--etcd-servers is set by the wrapper; do not pass it")
		case "bind-address":
			if !hasValue && i+1 < len(args) {
				value = args[i+1]
			}
			if ip := net.ParseIP(value); ip == nil || !ip.IsLoopback() {
				return wf, nil, fmt.Errorf("--bind-address=%s is not a loopback address", value)
			}
			sawBind = true
			rest = append(rest, arg)
		default:
			rest = append(rest, arg)
		}
	}
	if wf.etcdDir == "" {
		return wf, nil, fmt.Errorf("flag --embedded-etcd-dir is required")
	}
	if !sawBind {
		rest = append(rest, "--bind-address=127.0.0.1")
	}
	return wf, rest, nil
}

// startEtcd starts a single-member etcd on loopback and returns it with the
// client URL kube-apiserver should use.
func startEtcd(wf wrapperFlags) (*embed.Etcd, string, error) {
	clientPort, err := portOrFree(wf.clientPort)
	if err != nil {
		return nil, "", err
	}
	peerPort, err := portOrFree(wf.peerPort)
	if err != nil {
		return nil, "", err
	}
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))}

	cfg := embed.NewConfig()
	cfg.Name = "herald-test"
	cfg.Dir = wf.etcdDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error" // "warn" logs every failed-precondition request
	// A throw-away test store: durability is not needed, speed is.
	cfg.UnsafeNoFsync = true

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", err
	case <-time.After(etcdStartTimeout):
		e.Close()
		return nil, "", fmt.Errorf("etcd not ready after %v", etcdStartTimeout)
	}
	return e, clientURL.String(), nil
}

// portOrFree returns port, or a currently free loopback port if port is 0.
func portOrFree(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
