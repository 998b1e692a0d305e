package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/sink"
)

const (
	// ManagedLabel marks the ConfigMaps the controller manages: only those
	// with ManagedLabel=true are watched.
	ManagedLabel = "herald.example/managed"
	// ModeKey is the data key every managed ConfigMap must hold.
	ModeKey = "mode"
	// Component is the event source of the controller's events.
	Component = "herald-example-controller"

	// ReasonSynced is the reason of the Normal event a valid ConfigMap gets.
	ReasonSynced = "Synced"
	// ReasonInvalidSpec is the reason of the Warning event an invalid
	// ConfigMap gets; the message says what is wrong.
	ReasonInvalidSpec = "InvalidSpec"
)

// Defaults of [Config].
const (
	DefaultResync          = 30 * time.Second
	DefaultWorkers         = 2
	DefaultShutdownTimeout = 10 * time.Second
)

// maxRequeues bounds the retries of a key whose reconcile failed.
const maxRequeues = 5

// modes are the values ModeKey may take.
var modes = []string{"fast", "safe", "off"}

// Config configures [Run]. Only Client is required; a zero field means its
// default.
type Config struct {
	// Client talks to the API server: it lists and watches ConfigMaps and
	// writes events.
	Client kubernetes.Interface
	// Namespace is the namespace to watch; "" watches every namespace.
	Namespace string
	// Resync is the informer's resync period: every Resync each ConfigMap is
	// reconciled again and its event recorded again. Default 30 s; the
	// informer raises less than 1 s to 1 s.
	Resync time.Duration
	// Workers is the number of reconcile goroutines. Default 2.
	Workers int
	// ShutdownTimeout bounds the flush of pending events once the context
	// of Run ends. Default 10 s.
	ShutdownTimeout time.Duration
	// BroadcasterOptions are passed to record.NewBroadcaster after the
	// controller's own (a logger taken from the context of Run).
	BroadcasterOptions []record.BroadcasterOption
}

// Validate reports what is wrong with a managed ConfigMap, or nil when it is
// valid: its data must hold ModeKey with one of the values fast, safe, off.
func Validate(cm *v1.ConfigMap) error {
	mode, ok := cm.Data[ModeKey]
	switch {
	case !ok:
		return fmt.Errorf("missing required key %q", ModeKey)
	case !slices.Contains(modes, mode):
		return fmt.Errorf("%s %q is not one of %s", ModeKey, mode, strings.Join(modes, ", "))
	}
	return nil
}

// Run runs the controller until ctx ends, then stops it: the workers finish
// the ConfigMap they are reconciling, the informer stops, and the event
// broadcaster is shut down with ShutdownWithContext, which writes the events
// still pending for up to cfg.ShutdownTimeout. Run returns the broadcaster's
// final Stats. The error is nil after a clean stop; it reports a bad Config,
// an informer cache that never synced, or events abandoned at shutdown.
//
// Run logs through the logger of ctx (klog.FromContext).
func Run(ctx context.Context, cfg Config) (record.Stats, error) {
	if cfg.Client == nil {
		return record.Stats{}, errors.New("controller: Config.Client is nil")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	logger := klog.LoggerWithName(klog.FromContext(ctx), "controller")
	ctx = klog.NewContext(ctx, logger)

	// Events: the README's setup. The broadcaster is shut down explicitly
	// below, after the workers have stopped recording, so that the last
	// events are flushed too.
	broadcaster := record.NewBroadcaster(append([]record.BroadcasterOption{record.WithLogger(logger)}, cfg.BroadcasterOptions...)...)
	broadcaster.StartStructuredLogging(4)
	broadcaster.StartRecordingToSink(&sink.EventSinkImpl{Interface: cfg.Client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: Component})

	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, cfg.Resync,
		informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ManagedLabel + "=true" }))
	configMaps := factory.Core().V1().ConfigMaps()
	c := &controller{
		lister:   configMaps.Lister(),
		recorder: recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "herald-example-configmaps"}),
	}
	// A resync calls UpdateFunc with the same object twice; enqueue it
	// anyway, so that every resync reconciles (and records) again.
	if _, err := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(logger, obj) },
		UpdateFunc: func(_, obj any) { c.enqueue(logger, obj) },
		DeleteFunc: func(obj any) { c.enqueue(logger, obj) },
	}); err != nil {
		c.queue.ShutDown()
		_ = broadcaster.ShutdownWithContext(ctx)
		return broadcaster.Stats(), fmt.Errorf("controller: adding the event handler: %w", err)
	}

	logger.V(1).Info("Starting controller", "namespace", cfg.Namespace, "resync", cfg.Resync, "workers", cfg.Workers)
	// The channel forms of Start and WaitForCacheSync: their WithContext
	// forms came with client-go v0.36, and herald builds with v0.35 too.
	factory.Start(ctx.Done())
	var syncErr error
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			syncErr = fmt.Errorf("failed to sync the %v cache: %w", typ, context.Cause(ctx))
		}
	}

	var wg sync.WaitGroup
	if syncErr == nil {
		for range cfg.Workers {
			wg.Go(func() {
				for c.processNext(ctx) {
				}
			})
		}
		<-ctx.Done()
	}

	// Stop in order: no new keys, the workers finish what they hold, the
	// informer stops, then every event recorded so far is written.
	logger.V(1).Info("Stopping controller")
	c.queue.ShutDown()
	wg.Wait()
	factory.Shutdown()
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	shutdownErr := broadcaster.ShutdownWithContext(flushCtx)
	stats := broadcaster.Stats()
	logger.V(1).Info("Controller stopped", "recorded", stats.Recorded, "written", stats.Created+stats.Patched,
		"dropped", stats.Dropped.Total(), "abandoned", stats.Abandoned)
	if syncErr != nil {
		return stats, fmt.Errorf("controller: ConfigMap cache never synced: %w", syncErr)
	}
	if shutdownErr != nil {
		return stats, fmt.Errorf("controller: %w", shutdownErr)
	}
	return stats, nil
}

// controller holds what the workers share.
type controller struct {
	lister   corelisters.ConfigMapLister
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
}

func (c *controller) enqueue(logger klog.Logger, obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		logger.Error(err, "Unable to get the key of an object")
		return
	}
	c.queue.Add(key)
}

// processNext reconciles one key; it returns false once the queue is shut
// down.
func (c *controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	err := c.reconcile(ctx, key)
	switch {
	case err == nil:
		c.queue.Forget(key)
	case c.queue.NumRequeues(key) < maxRequeues:
		klog.FromContext(ctx).V(2).Info("Reconcile failed, will retry", "key", key, "err", err)
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed, giving up", "key", key)
	}
	return true
}

// reconcile validates the ConfigMap named by key and records the outcome as
// an event on it.
func (c *controller) reconcile(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Invalid key", "key", key)
		return nil // retrying cannot fix it
	}
	cm, err := c.lister.ConfigMaps(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: nothing to report on
	}
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	if err := Validate(cm); err != nil {
		logger.V(4).Info("ConfigMap is invalid", "configMap", klog.KObj(cm), "err", err)
		c.recorder.Event(cm, v1.EventTypeWarning, ReasonInvalidSpec, err.Error())
		return nil
	}
	logger.V(4).Info("ConfigMap synced", "configMap", klog.KObj(cm), "mode", cm.Data[ModeKey])
	c.recorder.Eventf(cm, v1.EventTypeNormal, ReasonSynced, "Synced with %s %q", ModeKey, cm.Data[ModeKey])
	return nil
}
