package eventlog

import (
	"sync"
	"testing"
)

func TestLog(t *testing.T) {
	var l Log[int]
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { l.Add(i) })
	}
	wg.Wait()
	all := l.All()
	if len(all) != 100 {
		t.Fatalf("%d events", len(all))
	}
	all[0] = -1 // a copy
	if l.All()[0] == -1 {
		t.Fatal("All returned the log itself")
	}
	if even := l.Filter(func(i int) bool { return i%2 == 0 }); len(even) != 50 {
		t.Fatalf("filter: %d", len(even))
	}
	l.Reset()
	if len(l.All()) != 0 {
		t.Fatal("Reset kept events")
	}
}
