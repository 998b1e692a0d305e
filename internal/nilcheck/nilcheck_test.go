package nilcheck

import "testing"

type s struct{}

func TestIsNil(t *testing.T) {
	var p *s
	var m map[string]int
	var f func()
	var c chan int
	var sl []int
	cases := []struct {
		v    any
		want bool
	}{{nil, true}, {p, true}, {m, true}, {f, true}, {c, true}, {sl, true}, {&s{}, false}, {s{}, false}, {0, false}, {"", false}}
	for i, c := range cases {
		if got := IsNil(c.v); got != c.want {
			t.Errorf("case %d (%T): IsNil = %v, want %v", i, c.v, got, c.want)
		}
	}
}
