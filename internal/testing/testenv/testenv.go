package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// AdminUser is the name of the admin user (group system:masters).
	AdminUser = "herald-admin"
	// RestrictedUser is the name of the restricted user: it may only
	// create, patch, get and list events, and only in the namespaces it was
	// granted (RestrictedNamespace and those passed to
	// [Env.AllowRestrictedEvents]).
	RestrictedUser = "herald-restricted"
	// RestrictedNamespace is the namespace in which the restricted user may
	// write events.
	RestrictedNamespace = "herald-restricted"

	// eventWriterRole is the ClusterRole bound to the restricted user per
	// namespace.
	eventWriterRole = "herald-event-writer"

	defaultReadyTimeout = 60 * time.Second
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 15 * time.Second
	// startAttempts bounds retries after a port clash.
	startAttempts = 3
	// logTailLines is how much of the server log a start error carries.
	logTailLines = 40

	keepEnv    = "HERALD_TESTENV_KEEP"
	kubectlEnv = "HERALD_KUBECTL"
)

// Options configures [Start]. The zero value is a plain server.
type Options struct {
	// ExtraArgs are appended to the kube-apiserver command line.
	ExtraArgs []string
	// AdmissionConfig is the content of an AdmissionConfiguration YAML
	// document (apiserver.config.k8s.io/v1). It is written to a file and
	// passed with --admission-control-config-file. Plugin configurations can
	// be embedded inline with "configuration:". The plugins it names (on
	// lines of the form "- name: Plugin") are enabled as if listed in
	// EnableAdmissionPlugins.
	AdmissionConfig string
	// EnableAdmissionPlugins are passed with --enable-admission-plugins,
	// for example "EventRateLimit" to get real 429s from the server.
	EnableAdmissionPlugins []string
	// ReadyTimeout bounds the wait for /readyz; 0 means 60 s.
	ReadyTimeout time.Duration
	// Logf, if not nil, receives progress messages. [Main] defaults it to
	// standard error.
	Logf func(format string, args ...any)
}

// Env is a running kube-apiserver. Its exported fields are read-only. Stop it
// with [Env.Stop]. The methods are safe for concurrent use.
type Env struct {
	// Admin is a config for AdminUser (system:masters). Client-side
	// throttling is relaxed (QPS 1000, burst 2000); change a copy if a test
	// needs client-go's defaults.
	Admin *rest.Config
	// Restricted is a config for RestrictedUser, throttled like Admin.
	Restricted *rest.Config
	// RestrictedUser is the restricted user's name ([RestrictedUser]).
	RestrictedUser string
	// RestrictedNamespace is the namespace in which the restricted user may
	// write events ([RestrictedNamespace]); Start creates it.
	RestrictedNamespace string
	// Kubeconfig is the path of an admin kubeconfig file, for kubectl.
	Kubeconfig string
	// URL is the server's base URL, https://127.0.0.1:PORT.
	URL string
	// Dir is the temporary directory holding the server's files; Stop
	// removes it unless $HERALD_TESTENV_KEEP is set.
	Dir string
	// LogFile is the server's combined output.
	LogFile string

	bin        string
	args       []string
	adminToken string
	timeout    time.Duration

	mu     sync.Mutex
	cmd    *exec.Cmd     // the current process
	exited chan struct{} // closed when cmd has been waited for

	admin    kubernetes.Interface
	logf     func(string, ...any)
	stopOnce sync.Once
	stopErr  error
}

// Start runs a kube-apiserver and returns once it is ready and set up, or
// with an error carrying the tail of the server log. ctx bounds the start
// only: the server runs until [Env.Stop]. On error nothing is left behind
// (but Dir, if $HERALD_TESTENV_KEEP is set).
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	bin, err := BinaryPath()
	if err != nil {
		return nil, err
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = defaultReadyTimeout
	}

	dir, err := os.MkdirTemp("", "herald-testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	defer func() {
		if err != nil && os.Getenv(keepEnv) == "" {
			_ = os.RemoveAll(dir)
		}
	}()
	adminToken, restrictedToken, err := writeFiles(dir, opts)
	if err != nil {
		return nil, err
	}

	begin := time.Now()
	var e *Env
	for attempt := 1; ; attempt++ {
		e, err = launch(ctx, bin, dir, attempt, opts, adminToken, timeout)
		if err == nil {
			break
		}
		if attempt >= startAttempts || !errors.Is(err, errPortClash) {
			return nil, err
		}
		logf("testenv: kube-apiserver port clash, retrying: %v", err)
	}
	e.logf = logf
	defer func() {
		if err != nil {
			e.kill()
		}
	}()

	if err := e.setupClients(adminToken, restrictedToken); err != nil {
		return nil, err
	}
	setupCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := e.setupRBAC(setupCtx); err != nil {
		return nil, fmt.Errorf("testenv: setting up RBAC: %w", err)
	}
	logf("testenv: kube-apiserver ready at %s in %v (dir %s)", e.URL, time.Since(begin).Round(time.Millisecond), dir)
	return e, nil
}

// writeFiles writes the service-account key, the token file and the
// admission configuration into dir and returns the two users' tokens.
func writeFiles(dir string, opts Options) (adminToken, restrictedToken string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("testenv: generating service-account key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("testenv: %w", err)
	}
	adminToken, restrictedToken = randomToken(), randomToken()
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n",
		adminToken, AdminUser, AdminUser, restrictedToken, RestrictedUser, RestrictedUser)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return "", "", fmt.Errorf("testenv: %w", err)
	}
	if opts.AdmissionConfig != "" {
		if err := os.WriteFile(filepath.Join(dir, "admission.yaml"), []byte(opts.AdmissionConfig), 0o600); err != nil {
			return "", "", fmt.Errorf("testenv: %w", err)
		}
	}
	return adminToken, restrictedToken, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// errPortClash marks a start that failed because a port was taken between
// choosing and binding it.
var errPortClash = errors.New("port already in use")

// launch starts the server process and waits for /readyz.
func launch(ctx context.Context, bin, dir string, attempt int, opts Options, adminToken string, timeout time.Duration) (*Env, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--embedded-etcd-dir=" + filepath.Join(dir, fmt.Sprintf("etcd-%d", attempt)),
		"--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		// The "kubernetes" Service cannot point at a loopback address; skip
		// its reconciler instead of logging a failure every 10 s.
		"--endpoint-reconciler-type=none",
	}
	if opts.AdmissionConfig != "" {
		args = append(args, "--admission-control-config-file="+filepath.Join(dir, "admission.yaml"))
	}
	if plugins := admissionPlugins(opts); len(plugins) > 0 {
		args = append(args, "--enable-admission-plugins="+strings.Join(plugins, ","))
	}
	args = append(args, opts.ExtraArgs...)

	e := &Env{
		RestrictedUser:      RestrictedUser,
		RestrictedNamespace: RestrictedNamespace,
		URL:                 "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Dir:                 dir,
		LogFile:             filepath.Join(dir, fmt.Sprintf("kube-apiserver-%d.log", attempt)),
		bin:                 bin,
		args:                args,
		adminToken:          adminToken,
		timeout:             timeout,
	}
	if err := e.run(ctx); err != nil {
		tail := logTail(e.LogFile, logTailLines)
		if strings.Contains(tail, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortClash, err)
		}
		return nil, fmt.Errorf("testenv: kube-apiserver (%s) did not become ready: %w\n--- last lines of its log ---\n%s", bin, err, tail)
	}
	return e, nil
}

// run starts the server process with e's command line, appending to its
// log, and waits until it is ready; on failure it kills it.
func (e *Env) run(ctx context.Context) error {
	out, err := os.OpenFile(e.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	defer out.Close() // the child has its own descriptor

	cmd := exec.Command(e.bin, e.args...)
	cmd.Dir = e.Dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: starting %s: %w", e.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	e.mu.Lock()
	e.cmd, e.exited = cmd, exited
	e.mu.Unlock()
	if err := e.waitReady(ctx, e.adminToken, e.timeout); err != nil {
		e.kill()
		return err
	}
	return nil
}

// Halt stops the server process (SIGTERM, then SIGKILL after 15 s) but
// keeps its data, its certificates and its port, so that [Env.Restart]
// can start it again on the same data: meanwhile clients get "connection
// refused", as from an API server that is restarting.
func (e *Env) Halt() error {
	if e.terminate() {
		return fmt.Errorf("testenv: kube-apiserver did not exit within %v of SIGTERM and was killed", stopGrace)
	}
	return nil
}

// Kill stops the server process at once (SIGKILL, no grace: etcd and the
// API server get no chance to finish anything) but keeps its data, its
// certificates and its port, as [Env.Halt] does, so that [Env.Restart] can
// start it again on the same data, as after a crash.
func (e *Env) Kill() { e.kill() }

// Restart starts the server halted by [Env.Halt] or [Env.Kill] again, with the same
// command line (port, data, certificates), and returns once it is ready.
func (e *Env) Restart(ctx context.Context) error {
	if err := e.run(ctx); err != nil {
		return fmt.Errorf("testenv: restarting kube-apiserver: %w\n--- last lines of its log ---\n%s", err, logTail(e.LogFile, logTailLines))
	}
	return nil
}

// admissionPlugins returns EnableAdmissionPlugins plus the plugins named in
// AdmissionConfig, without duplicates.
func admissionPlugins(opts Options) []string {
	var plugins []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			plugins = append(plugins, p)
		}
	}
	for _, p := range opts.EnableAdmissionPlugins {
		add(p)
	}
	for _, line := range strings.Split(opts.AdmissionConfig, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-")
		if !ok {
			continue
		}
		if name, ok := strings.CutPrefix(strings.TrimSpace(rest), "name:"); ok {
			add(strings.Trim(strings.TrimSpace(name), `"'`))
		}
	}
	return plugins
}

// waitReady polls /readyz until it answers 200, the process exits, ctx ends
// or timeout passes.
func (e *Env) waitReady(ctx context.Context, token string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // loopback, cert not yet known
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("/readyz answered %d: %s", resp.StatusCode, lastLines(body.String(), 5))
		} else {
			last = err.Error()
		}
		cmd, exited := e.process()
		select {
		case <-exited:
			return fmt.Errorf("process exited (%v)", cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v (last check: %s): %w", timeout, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// setupClients fills Admin, Restricted and Kubeconfig.
func (e *Env) setupClients(adminToken, restrictedToken string) error {
	ca, err := os.ReadFile(filepath.Join(e.Dir, "certs", "apiserver.crt"))
	if err != nil {
		return fmt.Errorf("testenv: reading the server certificate: %w", err)
	}
	newConfig := func(token string) *rest.Config {
		return &rest.Config{
			Host:            e.URL,
			BearerToken:     token,
			TLSClientConfig: rest.TLSClientConfig{CAData: ca},
			QPS:             1000,
			Burst:           2000,
		}
	}
	e.Admin = newConfig(adminToken)
	e.Restricted = newConfig(restrictedToken)
	if e.admin, err = kubernetes.NewForConfig(e.Admin); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}

	kc := clientcmdapi.NewConfig()
	kc.Clusters["herald"] = &clientcmdapi.Cluster{Server: e.URL, CertificateAuthorityData: ca}
	kc.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{Token: adminToken}
	kc.Contexts["herald"] = &clientcmdapi.Context{Cluster: "herald", AuthInfo: AdminUser}
	kc.CurrentContext = "herald"
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, e.Kubeconfig); err != nil {
		return fmt.Errorf("testenv: writing kubeconfig: %w", err)
	}
	return nil
}

// setupRBAC creates the restricted namespace and the event-writer role and
// waits until the restricted user's permission is in effect.
func (e *Env) setupRBAC(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: eventWriterRole},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"", "events.k8s.io"},
			Resources: []string{"events"},
			Verbs:     []string{"create", "patch", "get", "list"},
		}},
	}
	if _, err := e.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RestrictedNamespace}}
	if _, err := e.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	return e.allowEvents(ctx, RestrictedNamespace)
}

// allowEvents binds the event-writer role to the restricted user in
// namespace and waits until the authorizer has seen the binding.
func (e *Env) allowEvents(ctx context.Context, namespace string) error {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: eventWriterRole, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: eventWriterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: RestrictedUser}},
	}
	if _, err := e.admin.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               RestrictedUser,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "events"},
	}}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		res, err := e.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if res.Status.Allowed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restricted user still not allowed to create events in %s: %w", namespace, ctx.Err())
		case <-tick.C:
		}
	}
}

// AllowRestrictedEvents lets the restricted user create, patch, get and list
// events in namespace too, once the authorizer has seen it. It fails t on
// error.
func (e *Env) AllowRestrictedEvents(t testing.TB, namespace string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.AllowRestrictedEventsContext(ctx, namespace); err != nil {
		t.Fatal(err)
	}
}

// AllowRestrictedEventsContext is [Env.AllowRestrictedEvents] for code
// without a testing.TB (a command such as the soak): it returns the error.
func (e *Env) AllowRestrictedEventsContext(ctx context.Context, namespace string) error {
	if err := e.allowEvents(ctx, namespace); err != nil {
		return fmt.Errorf("testenv: allowing %s to write events in %s: %w", RestrictedUser, namespace, err)
	}
	return nil
}

// CreateNamespace creates a namespace named prefix plus a random suffix and
// deletes it when t ends. It fails t on error.
//
// There is no controller manager, so a deleted namespace stays Terminating
// with its content (and the server refuses new objects in it) until the
// server stops.
func (e *Env) CreateNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(prefix)}}
	created, err := e.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testenv: creating namespace %q: %v", prefix, err)
	}
	name := created.Name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := e.admin.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testenv: deleting namespace %s: %v", name, err)
		}
	})
	return name
}

// namespacePrefix turns prefix into a valid GenerateName for a namespace: a
// DNS label of at most 57 characters (the server adds 5) ending with "-".
func namespacePrefix(prefix string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(prefix) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	if s == "" {
		s = "test"
	}
	return s + "-"
}

// Kubectl runs kubectl with the admin kubeconfig and returns its standard
// output. On failure the error carries kubectl's standard error. kubectl is
// $HERALD_KUBECTL, else the first kubectl on $PATH, else /usr/bin/kubectl.
func (e *Env) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	kubectl := os.Getenv(kubectlEnv)
	if kubectl == "" {
		var err error
		if kubectl, err = exec.LookPath("kubectl"); err != nil {
			kubectl = "/usr/bin/kubectl"
		}
	}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig=" + e.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("testenv: kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Stop ends the server (SIGTERM, then SIGKILL after 15 s), waits for it and
// removes Dir (unless $HERALD_TESTENV_KEEP is set). It is idempotent and
// returns the first call's result.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		killed := e.terminate()
		if killed {
			e.stopErr = fmt.Errorf("testenv: kube-apiserver did not exit within %v of SIGTERM and was killed; log: %s", stopGrace, e.LogFile)
		}
		if os.Getenv(keepEnv) != "" {
			if e.logf != nil {
				e.logf("testenv: keeping %s", e.Dir)
			}
			return
		}
		if err := os.RemoveAll(e.Dir); err != nil && e.stopErr == nil {
			e.stopErr = fmt.Errorf("testenv: %w", err)
		}
	})
	return e.stopErr
}

// terminate sends SIGTERM to the current process, waits up to stopGrace,
// then kills; it reports whether a kill was needed.
func (e *Env) terminate() (killed bool) {
	cmd, exited := e.process()
	signalGroup(cmd, sigterm)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-exited:
		return false
	case <-t.C:
		e.kill()
		return true
	}
}

// kill kills the process group at once and waits for the process.
func (e *Env) kill() {
	cmd, exited := e.process()
	signalGroup(cmd, sigkill)
	<-exited
}

func (e *Env) process() (*exec.Cmd, chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cmd, e.exited
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return lastLines(string(data), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
