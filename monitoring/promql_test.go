package monitoring

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// checker parses PromQL with Prometheus' parser and checks every metric
// and label it names against a catalog of what herald exports.
type checker struct {
	cat  catalog
	p    parser.Parser
	errs []string
	// require lists labels every selector must match on (the dashboard's
	// job and instance variables).
	require []string
	// used collects the metric names the checked expressions select.
	used map[string]bool
}

func newChecker(c catalog) *checker {
	return &checker{cat: c, p: parser.NewParser(parser.Options{}), used: map[string]bool{}}
}

func (c *checker) errorf(where, format string, args ...any) {
	c.errs = append(c.errs, where+": "+fmt.Sprintf(format, args...))
}

// check parses expr and returns the labels its result series carry (nil
// when it does not parse).
func (c *checker) check(where, expr string) map[string]bool {
	e, err := c.p.ParseExpr(expr)
	if err != nil {
		c.errorf(where, "%q does not parse: %v", expr, err)
		return nil
	}
	return c.out(where, e)
}

// literalAlternatives matches a regexp that is only literal words joined
// by |, such as "already_exists|namespace_terminating".
var literalAlternatives = regexp.MustCompile(`^[A-Za-z0-9_]+(\|[A-Za-z0-9_]+)*$`)

func (c *checker) selector(where string, vs *parser.VectorSelector) map[string]bool {
	name := vs.Name
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			name = m.Value
		}
	}
	ls, f, ok := c.cat.lookup(name)
	if !ok {
		c.errorf(where, "metric %q is not exported by record/metrics", name)
		return nil
	}
	c.used[name] = true
	matched := map[string]bool{}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName {
			continue
		}
		matched[m.Name] = true
		if !ls[m.Name] {
			c.errorf(where, "%s has no label %q (it has %s)", name, m.Name, describe(ls))
			continue
		}
		seen := f.values[m.Name]
		if seen == nil {
			continue // a target label: its values are the scrape's
		}
		var vals []string
		switch m.Type {
		case labels.MatchEqual, labels.MatchNotEqual:
			vals = []string{m.Value}
		case labels.MatchRegexp, labels.MatchNotRegexp:
			if literalAlternatives.MatchString(m.Value) {
				vals = strings.Split(m.Value, "|")
			}
		}
		for _, v := range vals {
			if !seen[v] {
				c.errorf(where, "%s{%s} never has the value %q (it has %s)", name, m.Name, v, describe(seen))
			}
		}
	}
	for _, l := range c.require {
		if !matched[l] {
			c.errorf(where, "selector of %s does not match on %q", name, l)
		}
	}
	return ls
}

// out returns the labels of e's result series, reporting the metrics and
// labels it uses that herald does not export.
func (c *checker) out(where string, e parser.Expr) map[string]bool {
	switch e := e.(type) {
	case *parser.VectorSelector:
		return c.selector(where, e)
	case *parser.MatrixSelector:
		return c.out(where, e.VectorSelector)
	case *parser.SubqueryExpr:
		return c.out(where, e.Expr)
	case *parser.ParenExpr:
		return c.out(where, e.Expr)
	case *parser.UnaryExpr:
		return c.out(where, e.Expr)
	case *parser.StepInvariantExpr:
		return c.out(where, e.Expr)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return map[string]bool{}
	case *parser.Call:
		ls := map[string]bool{}
		for _, a := range e.Args {
			for l := range c.out(where, a) {
				ls[l] = true
			}
		}
		switch e.Func.Name {
		case "vector", "scalar", "time":
			return map[string]bool{}
		case "label_replace", "label_join":
			if s, ok := e.Args[1].(*parser.StringLiteral); ok {
				ls[s.Val] = true
			}
		}
		return ls
	case *parser.AggregateExpr:
		in := c.out(where, e.Expr)
		if e.Param != nil {
			c.out(where, e.Param)
		}
		for _, l := range e.Grouping {
			if in != nil && !in[l] {
				c.errorf(where, "%s groups by %q, which its series %s do not have", e.Op, l, describe(in))
			}
		}
		if e.Without {
			ls := map[string]bool{}
			for l := range in {
				ls[l] = true
			}
			for _, l := range e.Grouping {
				delete(ls, l)
			}
			return ls
		}
		ls := map[string]bool{}
		for _, l := range e.Grouping {
			ls[l] = true
		}
		if e.Op == parser.COUNT_VALUES {
			if s, ok := e.Param.(*parser.StringLiteral); ok {
				ls[s.Val] = true
			}
		}
		return ls
	case *parser.BinaryExpr:
		l, r := c.out(where, e.LHS), c.out(where, e.RHS)
		vm := e.VectorMatching
		if vm == nil || e.LHS.Type() != parser.ValueTypeVector || e.RHS.Type() != parser.ValueTypeVector {
			// One side is a scalar: the result is the other side's.
			if e.LHS.Type() == parser.ValueTypeVector {
				return l
			}
			return r
		}
		for _, m := range vm.MatchingLabels {
			if vm.On && (l != nil && !l[m] || r != nil && !r[m]) {
				c.errorf(where, "%s matches on %q, which one side does not have", e.Op, m)
			}
		}
		switch e.Op {
		case parser.LOR:
			for k := range r {
				l[k] = true
			}
			return l
		case parser.LAND, parser.LUNLESS:
			return l
		}
		many, one := l, r
		if vm.Card == parser.CardOneToMany {
			many, one = r, l
		}
		for _, inc := range vm.Include {
			if one != nil && !one[inc] {
				c.errorf(where, "%s includes %q, which the one side does not have", e.Op, inc)
			}
		}
		if vm.Card != parser.CardOneToOne {
			ls := map[string]bool{}
			for k := range many {
				ls[k] = true
			}
			for _, inc := range vm.Include {
				ls[inc] = true
			}
			return ls
		}
		if e.Op.IsComparisonOperator() && !e.ReturnBool {
			return l // a filter: the left side's series, unchanged
		}
		ls := map[string]bool{}
		if vm.On {
			for _, m := range vm.MatchingLabels {
				ls[m] = true
			}
			return ls
		}
		for k := range l {
			ls[k] = true
		}
		for _, m := range vm.MatchingLabels {
			delete(ls, m)
		}
		return ls
	}
	c.errorf(where, "unexpected PromQL node %T", e)
	return nil
}

// templateLabels finds the labels a text refers to: {{ $labels.x }} in an
// alert's annotations, {{x}} in a panel's legend.
var (
	alertLabelRef  = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)`)
	legendLabelRef = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
)

func (c *checker) checkRefs(where string, re *regexp.Regexp, text string, have map[string]bool) {
	if have == nil {
		return // the expression's own error is reported
	}
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		if !have[m[1]] {
			c.errorf(where, "refers to label %q, which the expression's series %s do not have", m[1], describe(have))
		}
	}
}
