// Package monitoring holds no code: it is the test-only module that checks
// herald's Prometheus alerting rules (alerts.yaml) and Grafana dashboard
// (dashboard.json) against Prometheus' own rule-file and PromQL parsers and
// against the metrics record/metrics really exports. It is a module of its
// own so that herald's users do not inherit Prometheus' dependencies.
package monitoring
