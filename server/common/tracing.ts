/**
 * Optional OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT): one server span per HTTP request,
 * named by its route template, with the request id (`request.id`, as in the logs and the
 * `X-Request-Id` answer header), method, route and status; exported over OTLP/HTTP (JSON) to
 * `<endpoint>/v1/traces` in batches. A caller's W3C `traceparent` makes the span its child.
 *
 * Off by default and free when off: the SDK is loaded by dynamic import only when the endpoint is
 * set, so a service without it never loads a byte of it (test/foundation/tracing.test.ts).
 * Like the metrics, spans carry route templates, never the raw path, query or any header.
 */
import type { Logger } from './log.js';

export interface RequestTracing {
  /** Starts the span of a request; the function returned ends it once the answer is known. */
  begin(method: string, requestId: string, traceparent: string | undefined): (route: string, status: number) => void;
  /** Exports what is still buffered and stops. */
  close(): Promise<void>;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The OTLP/HTTP traces URL for a base endpoint, as the OTLP spec derives it from OTEL_EXPORTER_OTLP_ENDPOINT. */
export function otlpTracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

export async function startTracing(endpoint: string, service: 'account' | 'agent', log: Logger): Promise<RequestTracing> {
  const [api, { BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const exporter = new OTLPTraceExporter({ url: otlpTracesUrl(endpoint) });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': `agent-accounts-${service}` }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('agent-accounts');
  log.info({ endpoint: otlpTracesUrl(endpoint) }, 'exporting traces (OTLP/HTTP)');
  return {
    begin(method, requestId, traceparent) {
      const parent = TRACEPARENT.exec(traceparent ?? '');
      const context =
        parent && !/^0+$/.test(parent[1]!) && !/^0+$/.test(parent[2]!)
          ? api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: parent[1]!, spanId: parent[2]!, traceFlags: Number.parseInt(parent[3]!, 16), isRemote: true })
          : api.ROOT_CONTEXT;
      const span = tracer.startSpan(method, { kind: api.SpanKind.SERVER, attributes: { 'request.id': requestId, 'http.request.method': method } }, context);
      return (route, status) => {
        span.updateName(`${method} ${route}`);
        span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
        if (status >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR });
        span.end();
      };
    },
    async close() {
      await provider.shutdown().catch((error: unknown) => log.warn({ err: error }, 'exporting the last traces failed'));
    },
  };
}
