import t from 'tap'
import { Counter, Histogram, Registry } from 'prom-client'
import { createRequestMetrics } from '../../src/metrics/request-metrics.js'

const NAMES = { counter: 'http_requests_total', counterHelp: 'HTTP requests', histogram: 'http_request_duration_seconds', histogramHelp: 'HTTP latency' }
const BUCKETS = [0.001, 0.01, 0.1]

/** The sample lines of an exposition, sorted, so two writers can be compared line for line. */
const samples = (text: string): string[] => text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).sort()

t.test('writes what prom-client writes for the same observations', async (t) => {
  const ours = createRequestMetrics(NAMES, BUCKETS)
  const registry = new Registry()
  const counter = new Counter({ name: NAMES.counter, help: NAMES.counterHelp, labelNames: ['route', 'method', 'status'], registers: [registry] })
  const histogram = new Histogram({ name: NAMES.histogram, help: NAMES.histogramHelp, labelNames: ['route', 'method', 'status'], buckets: BUCKETS, registers: [registry] })
  const observations: Array<[string, string, number, number]> = [
    ['/auth/Authenticate/:token', 'GET', 200, 0.0004],
    ['/auth/Authenticate/:token', 'GET', 200, 0.001],
    ['/auth/Authenticate/:token', 'GET', 200, 0.05],
    ['/auth/Authenticate/:token', 'GET', 403, 3],
    ['/auth/Login', 'POST', 200, 0.3],
    ['(unmatched)', 'GET', 404, 0.0001],
    ['/odd "route"\\\n', 'GET', 200, 0.01]
  ]
  for (const [route, method, status, seconds] of observations) {
    ours.observe(route, method, status, seconds)
    const labels = { route, method, status: String(status) }
    counter.inc(labels)
    histogram.observe(labels, seconds)
  }
  const text = ours.exposition()
  t.same(samples(text), samples(await registry.metrics()), 'the same samples, values and escaping')
  t.match(text, /^# HELP http_requests_total HTTP requests\n# TYPE http_requests_total counter\n/, 'HELP and TYPE first')
  t.match(text, /# TYPE http_request_duration_seconds histogram\n/)
  t.ok(text.endsWith('\n'))
})

t.test('nothing observed: the metric families, no samples', async (t) => {
  const text = createRequestMetrics(NAMES, BUCKETS).exposition()
  t.same(samples(text), [])
  t.match(text, /# TYPE http_requests_total counter/)
})
