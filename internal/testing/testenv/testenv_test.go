package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/heraldk8s/herald/internal/testing/faultproxy"
)

// env is the package's server, started by TestMain.
var env *Env

func TestMain(m *testing.M) {
	Main(m, Options{}, func(e *Env) { env = e })
}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func testEvent(namespace, name string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "p", APIVersion: "v1"},
		Reason:         "Testing",
		Message:        "hello",
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "testenv"},
	}
}

func TestAdminCreatesConfigMap(t *testing.T) {
	ctx := context.Background()
	cs := clientset(t, env.Admin)
	ns := env.CreateNamespace(t, "admin")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin creating a ConfigMap: %v", err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("reading it back: %v, %v", got, err)
	}
}

func TestRestrictedUser(t *testing.T) {
	ctx := context.Background()
	cs := clientset(t, env.Restricted)
	other := env.CreateNamespace(t, "other")

	for _, tc := range []struct {
		name    string
		do      func() error
		allowed bool
	}{
		{"create event in restricted namespace", func() error {
			_, err := cs.CoreV1().Events(env.RestrictedNamespace).Create(ctx, testEvent(env.RestrictedNamespace, "e1"), metav1.CreateOptions{})
			return err
		}, true},
		{"get event in restricted namespace", func() error {
			_, err := cs.CoreV1().Events(env.RestrictedNamespace).Get(ctx, "e1", metav1.GetOptions{})
			return err
		}, true},
		{"patch event in restricted namespace", func() error {
			_, err := cs.CoreV1().Events(env.RestrictedNamespace).Patch(ctx, "e1", "application/strategic-merge-patch+json",
				[]byte(`{"count":2}`), metav1.PatchOptions{})
			return err
		}, true},
		{"list events in restricted namespace", func() error {
			_, err := cs.CoreV1().Events(env.RestrictedNamespace).List(ctx, metav1.ListOptions{})
			return err
		}, true},
		{"delete event in restricted namespace", func() error {
			return cs.CoreV1().Events(env.RestrictedNamespace).Delete(ctx, "e1", metav1.DeleteOptions{})
		}, false},
		{"create event in other namespace", func() error {
			_, err := cs.CoreV1().Events(other).Create(ctx, testEvent(other, "e2"), metav1.CreateOptions{})
			return err
		}, false},
		{"create event in default", func() error {
			_, err := cs.CoreV1().Events("default").Create(ctx, testEvent("default", "e3"), metav1.CreateOptions{})
			return err
		}, false},
		{"create configmap in restricted namespace", func() error {
			_, err := cs.CoreV1().ConfigMaps(env.RestrictedNamespace).Create(ctx,
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
			return err
		}, false},
	} {
		err := tc.do()
		switch {
		case tc.allowed && err != nil:
			t.Errorf("%s: %v, want success", tc.name, err)
		case !tc.allowed && !apierrors.IsForbidden(err):
			t.Errorf("%s: got %v, want Forbidden", tc.name, err)
		}
	}

	env.AllowRestrictedEvents(t, other)
	if _, err := cs.CoreV1().Events(other).Create(ctx, testEvent(other, "e4"), metav1.CreateOptions{}); err != nil {
		t.Errorf("create event after AllowRestrictedEvents: %v", err)
	}
}

func TestKubectl(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := env.Kubectl(ctx, "get", "namespaces", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "namespace/"+env.RestrictedNamespace) {
		t.Errorf("kubectl get namespaces: %q lacks %s", out, env.RestrictedNamespace)
	}
	if _, err := env.Kubectl(ctx, "get", "nosuchkind"); err == nil || !strings.Contains(err.Error(), "nosuchkind") {
		t.Errorf("kubectl error = %v, want one carrying kubectl's message", err)
	}
}

func TestCreateNamespace(t *testing.T) {
	ctx := context.Background()
	cs := clientset(t, env.Admin)
	var name string
	t.Run("inner", func(t *testing.T) {
		name = env.CreateNamespace(t, "My_Test/Name")
		if !strings.HasPrefix(name, "my-test-name-") {
			t.Errorf("namespace %q lacks the sanitized prefix", name)
		}
	})
	// Without a controller manager, a deleted namespace stays Terminating.
	got, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil && got.DeletionTimestamp == nil {
		t.Errorf("namespace %s not deleted after its test ended", name)
	}
}

// TestFaultProxyInFront checks faultproxy against the real server.
func TestFaultProxyInFront(t *testing.T) {
	ctx := context.Background()
	p, err := faultproxy.New(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cs := clientset(t, p.Config(env.Restricted))
	ns := env.RestrictedNamespace
	create := func(name string) error {
		_, err := cs.CoreV1().Events(ns).Create(ctx, testEvent(ns, name), metav1.CreateOptions{})
		return err
	}
	if err := create("fp-1"); err != nil {
		t.Fatalf("create through the proxy: %v", err)
	}
	if _, err := cs.CoreV1().Events(ns).Patch(ctx, "fp-1", "application/strategic-merge-patch+json",
		[]byte(`{"count":3}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch through the proxy: %v", err)
	}
	p.FailWith(http.StatusServiceUnavailable, 0, 1)
	if err := create("fp-2"); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("injected 503: got %v", err)
	}
	p.Dark()
	if err := create("fp-3"); err == nil {
		t.Error("create while dark succeeded")
	}
	p.Light()
	if err := create("fp-4"); err != nil {
		t.Errorf("create after Light: %v", err)
	}
	if _, err := cs.CoreV1().Events("default").Create(ctx, testEvent("default", "fp-5"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("restricted user through the proxy outside its namespace: got %v, want Forbidden", err)
	}
	if got, want := p.Forwarded("POST", "/events"), 3; got != want {
		t.Errorf("forwarded POSTs = %d, want %d", got, want)
	}
	if got := p.Forwarded("PATCH", "/events/fp-1"); got != 1 {
		t.Errorf("forwarded PATCHes = %d, want 1", got)
	}
}

func TestNamespacePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"TestFoo":               "testfoo-",
		"a/b_c":                 "a-b-c-",
		"--":                    "test-",
		"":                      "test-",
		strings.Repeat("x", 80): strings.Repeat("x", 50) + "-",
	} {
		if got := namespacePrefix(in); got != want {
			t.Errorf("namespacePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAdmissionPlugins(t *testing.T) {
	got := admissionPlugins(Options{
		EnableAdmissionPlugins: []string{"EventRateLimit", "AlwaysPullImages"},
		AdmissionConfig: `plugins:
- name: EventRateLimit
  configuration: {}
-   name: "ResourceQuota"
`,
	})
	want := []string{"EventRateLimit", "AlwaysPullImages", "ResourceQuota"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("admissionPlugins = %v, want %v", got, want)
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv(binaryEnv, "/nonexistent/kube-apiserver")
	start := time.Now()
	_, err := Start(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver binary not found at /nonexistent/kube-apiserver") {
		t.Errorf("Start with a missing binary: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Start with a missing binary took %v", d)
	}
}

func TestStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"server exits", Options{ExtraArgs: []string{"--no-such-flag"}},
			[]string{"did not become ready", "process exited", "last lines of its log", "unknown flag: --no-such-flag"}},
		{"ready timeout", Options{ReadyTimeout: time.Millisecond},
			[]string{"did not become ready", "not ready after 1ms", "last lines of its log"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Setenv(keepEnv, "")
			start := time.Now()
			e, err := Start(context.Background(), tc.opts)
			if err == nil {
				e.Stop()
				t.Fatal("Start succeeded")
			}
			t.Logf("Start error:\n%v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("failing Start took %v", d)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("failed Start left %v in TMPDIR", left)
			}
		})
	}
}

func TestMissingBinaryInModule(t *testing.T) {
	t.Setenv(binaryEnv, "")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+rootModule+"\n\ngo 1.26\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "internal", "testenv", "kube-apiserver")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// A nested module of another path must be walked past.
	if err := os.WriteFile(filepath.Join(sub, "go.mod"), []byte("module "+rootModule+"/internal/testing/testenv/kube-apiserver\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	_, err := BinaryPath()
	want := "kube-apiserver binary not found at " + filepath.Join(root, "bin", "kube-apiserver") + ": run `make apiserver`"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("BinaryPath = %v, want an error containing %q", err, want)
	}
}

// TestSecondServerWithEventRateLimit starts a server of its own with the
// EventRateLimit admission plugin, checks that it answers real 429s, then
// checks that Stop leaves neither the process nor its directory behind.
func TestSecondServerWithEventRateLimit(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	e, err := Start(ctx, Options{
		Logf:            t.Logf,
		AdmissionConfig: EventRateLimitConfig("Server", 1, 3),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second server started in %v", time.Since(start))
	defer e.Stop()
	pid := e.cmd.Process.Pid

	// Raw requests (no client-side retry) until the server refuses one.
	cs := clientset(t, e.Admin)
	var tooMany error
	for i := range 20 {
		err := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("events").
			Body(testEvent("default", "rl-"+string(rune('a'+i)))).MaxRetries(0).Do(ctx).Error()
		if err != nil {
			tooMany = err
			break
		}
	}
	var se *apierrors.StatusError
	if !errors.As(tooMany, &se) || se.ErrStatus.Code != http.StatusTooManyRequests {
		t.Fatalf("EventRateLimit: got %v, want a 429 StatusError", tooMany)
	}
	// The server sends no Retry-After with this 429, so client-go's own
	// retry (which needs one) never hides it: herald's tests rely on that.
	if secs, ok := apierrors.SuggestsClientDelay(tooMany); ok {
		t.Errorf("EventRateLimit's 429 suggests a client delay of %ds; herald's tests assume none", secs)
	}
	t.Logf("EventRateLimit answer: %v (reason %s)", tooMany, se.ErrStatus.Reason)

	// Through a counting proxy, a typed client with client-go's default
	// retries also sees the 429 after a single request.
	p, err := faultproxy.New(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	viaProxy := clientset(t, p.Config(e.Admin))
	calls := 0
	for i := range 20 {
		calls++
		_, err = viaProxy.CoreV1().Events("default").Create(ctx, testEvent("default", fmt.Sprintf("typed-%d", i)), metav1.CreateOptions{})
		if err != nil {
			break
		}
	}
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("typed client: got %v, want 429", err)
	}
	if got := p.Requests("POST", "/events"); got != calls {
		t.Errorf("proxy saw %d POSTs for %d Create calls: client-go retried the 429", got, calls)
	}

	dir := e.Dir
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dir %s still exists after Stop (stat: %v)", dir, err)
	}
	if err := e.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestHaltRestartKeepsData halts a server of its own, checks that clients
// are refused meanwhile, restarts it and finds what was written before.
func TestHaltRestartKeepsData(t *testing.T) {
	stopRestart(t, func(e *Env) error { return e.Halt() })
}

// TestKillRestartKeepsData is TestHaltRestartKeepsData with the server
// killed (SIGKILL) instead: what it acknowledged survives the crash.
func TestKillRestartKeepsData(t *testing.T) {
	stopRestart(t, func(e *Env) error { e.Kill(); return nil })
}

func stopRestart(t *testing.T, stop func(*Env) error) {
	ctx := context.Background()
	e, err := Start(ctx, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	cs := clientset(t, e.Admin)
	if _, err := cs.CoreV1().Events("default").Create(ctx, testEvent("default", "before-halt"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := stop(e); err != nil {
		t.Fatal(err)
	}
	err = cs.CoreV1().RESTClient().Get().AbsPath("/readyz").MaxRetries(0).Do(ctx).Error()
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("halted server answered: %v", err)
	}
	start := time.Now()
	if err := e.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %v", time.Since(start))
	if _, err := cs.CoreV1().Events("default").Get(ctx, "before-halt", metav1.GetOptions{}); err != nil {
		t.Fatalf("data lost across the restart: %v", err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.Dir); !os.IsNotExist(err) {
		t.Fatalf("Stop left %s behind: %v", e.Dir, err)
	}
}
