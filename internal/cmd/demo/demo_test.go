package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/internal/testing/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

// TestDemo runs what `make demo` runs, against the package's server, both
// as a local server and through a kubeconfig (as with $KUBECONFIG set), and
// checks what it prints: every ConfigMap's events with counts that grew, the
// combined event of the burst, nothing lost, on one screen.
func TestDemo(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts options
		want []string
	}{
		{"local server", options{env: env}, nil},
		{"kubeconfig", options{kubeconfig: env.Kubeconfig}, []string{`(?m)^==> Using the cluster of \$KUBECONFIG \(https://127\.0\.0\.1:\d+\)$`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			opts := tc.opts
			opts.duration, opts.resync, opts.edits = 3*time.Second, time.Second, 12
			var out bytes.Buffer
			err := run(ctx, opts, &out)
			t.Logf("output:\n%s", out.String())
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if lines := strings.Count(out.String(), "\n"); lines > 40 {
				t.Errorf("%d lines of output, want at most 40", lines)
			}
			for _, want := range append([]string{
				`(?m)^TYPE +REASON +OBJECT +COUNT +AGE +MESSAGE$`,
				`(?m)^Normal +Synced +configmap/web +[2-9] .* Synced with mode "fast"$`,
				`(?m)^Normal +Synced +configmap/archive +[2-9] .* Synced with mode "off"$`,
				`(?m)^Warning +InvalidSpec +configmap/cache +[2-9] .* missing required key "mode"$`,
				`(?m)^Warning +InvalidSpec +configmap/queue +[2-9] .* mode "turbo" is not one of fast, safe, off$`,
				`(?m)^Warning +InvalidSpec +configmap/flaky +\d+ .* mode "try-9" is not one of fast, safe, off$`,
				`(?m)^Warning +InvalidSpec +configmap/flaky +[3-9] .* \(combined from similar events\): mode "try-12" is not one of fast, safe, off$`,
				`(?m)^\d+ events recorded: \d+ written, \d+ folded into counts, 0 lost\. The \d+ stored events' counts add up to \d+\.$`,
			}, tc.want...) {
				if !regexp.MustCompile(want).MatchString(out.String()) {
					t.Errorf("output does not match %s", want)
				}
			}

			// On a real cluster the demo deletes its namespace (here it
			// stays Terminating: there is no namespace controller).
			if opts.kubeconfig != "" {
				ns := regexp.MustCompile(`Namespace (herald-demo-\w+):`).FindStringSubmatch(out.String())
				if ns == nil {
					t.Fatal("no namespace in the output")
				}
				cs, err := kubernetes.NewForConfig(env.Admin)
				if err != nil {
					t.Fatal(err)
				}
				got, err := cs.CoreV1().Namespaces().Get(ctx, ns[1], metav1.GetOptions{})
				if err == nil && got.DeletionTimestamp == nil || err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("namespace %s not deleted: %v", ns[1], err)
				}
			}
		})
	}
}

// TestDemoEvents runs what `make demo-events` runs (-events), against the
// package's server, both as a local server and through a kubeconfig, and
// checks what it prints: `kubectl events` with the series' count, the
// Stats, nothing lost, on one screen.
func TestDemoEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts options
		want []string
	}{
		{"local server", options{env: env, events: true}, nil},
		{"kubeconfig", options{kubeconfig: env.Kubeconfig, events: true}, []string{`(?m)^==> Using the cluster of \$KUBECONFIG \(https://127\.0\.0\.1:\d+\)$`}},
		// Without kubectl the demo prints the events as kubectl would.
		{"no kubectl", options{env: env, events: true}, []string{`(?m)^\(kubectl: .*executable file not found`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no kubectl" {
				t.Setenv("PATH", t.TempDir())
			}
			_, ctx := ktesting.NewTestContext(t)
			var out bytes.Buffer
			err := run(ctx, tc.opts, &out)
			t.Logf("output:\n%s", out.String())
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if lines := strings.Count(out.String(), "\n"); lines > 30 {
				t.Errorf("%d lines of output, want at most 30", lines)
			}
			for _, want := range append([]string{
				`(?m)^==> Flush: 26 recorded, 26 written \(3 created, \d+ patched, \d+ folded into series counts\)$`,
				`(?m)^\$ kubectl events -n herald-events-demo-\w+$`,
				`(?m)^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$`,
				`(?m)^\S+ +Normal +Synced +ConfigMap/web +Synced with mode "fast"$`,
				`(?m)^\S+ +Normal +DependencyFound +ConfigMap/web +Uses configmap/cache$`,
				`(?m)^\S+ \(x25 over \S+\) +Warning +InvalidSpec +ConfigMap/cache +missing required key "mode"$`,
				`(?m)^herald Stats:  Recorded 27  Created 3  Patched \d+  Coalesced \d+  Dropped 0  Abandoned 0  Retried \d+$`,
				`(?m)^27 events recorded: 27 written, 0 lost\. The 3 stored events\.k8s\.io/v1 events stand for 27 occurrences\.$`,
			}, tc.want...) {
				if !regexp.MustCompile(want).MatchString(out.String()) {
					t.Errorf("output does not match %s", want)
				}
			}

			if tc.opts.kubeconfig != "" {
				ns := regexp.MustCompile(`Namespace (herald-events-demo-\w+):`).FindStringSubmatch(out.String())
				if ns == nil {
					t.Fatal("no namespace in the output")
				}
				cs, err := kubernetes.NewForConfig(env.Admin)
				if err != nil {
					t.Fatal(err)
				}
				got, err := cs.CoreV1().Namespaces().Get(ctx, ns[1], metav1.GetOptions{})
				if err == nil && got.DeletionTimestamp == nil || err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("namespace %s not deleted: %v", ns[1], err)
				}
			}
		})
	}
}
