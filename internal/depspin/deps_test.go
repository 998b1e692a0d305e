package depspin

import (
	_ "github.com/golang/groupcache/lru"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "go.uber.org/goleak"
	_ "golang.org/x/time/rate"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/tools/events"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/klog/v2/ktesting"
	_ "k8s.io/utils/clock/testing"
	_ "github.com/google/uuid"
)
