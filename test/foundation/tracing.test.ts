/**
 * Optional OpenTelemetry traces (server/common/tracing.ts). Without OTEL_EXPORTER_OTLP_ENDPOINT
 * neither service loads the SDK (each package is wrapped so that the test sees its first
 * import); with it, a real OTLP/HTTP receiver on loopback gets one span per request carrying the
 * request id, the route template and never the raw path.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestAccount, startTestAgent } from '../support/servers.js';

const loaded = vi.hoisted(() => new Set<string>());
vi.mock('@opentelemetry/sdk-trace-base', async (importOriginal) => {
  loaded.add('sdk-trace-base');
  return importOriginal();
});
vi.mock('@opentelemetry/exporter-trace-otlp-http', async (importOriginal) => {
  loaded.add('exporter-trace-otlp-http');
  return importOriginal();
});
vi.mock('@opentelemetry/resources', async (importOriginal) => {
  loaded.add('resources');
  return importOriginal();
});

interface OtlpSpan {
  name: string;
  traceId: string;
  parentSpanId?: string;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}

/** A minimal OTLP/HTTP receiver: POST /v1/traces with the JSON encoding, spans kept in order. */
async function startReceiver(): Promise<{ url: string; spans: OtlpSpan[]; services: Set<string>; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const services = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).includes('json')) {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const resource of body.resourceSpans) {
        const name = resource.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
        if (name) services.add(name);
        for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    services,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue !== undefined ? Number(value.intValue) : undefined);
};

let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

describe('OpenTelemetry traces', () => {
  it('are off by default: neither service loads the SDK', async () => {
    const [account, agent] = await Promise.all([startTestAccount('pglite'), startTestAgent()]);
    try {
      expect((await fetch(`${account.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${agent.url}/healthz`)).status).toBe(200);
      expect([...loaded]).toEqual([]);
    } finally {
      await Promise.all([account.stop(), agent.stop()]);
    }
    expect(receiver.spans).toHaveLength(0);
  });

  it('with OTEL_EXPORTER_OTLP_ENDPOINT, each request is a span with its request id, exported over OTLP/HTTP', async () => {
    // A trailing slash on the endpoint is fine: the traces path is appended once.
    const [account, agent] = await Promise.all([
      startTestAccount('pglite', { OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/` }),
      startTestAgent({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
    ]);
    const parentTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    try {
      const guest = await fetch(`${account.url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'trace-me-guest-1', traceparent: `00-${parentTrace}-00f067aa0ba902b7-01` },
        body: JSON.stringify({ device_id: 'tracing-device-0123456789abcdef' }),
      });
      expect(guest.status).toBe(200);
      const history = await fetch(`${agent.url}/chat/secret-chat-id/history`, { headers: { ...agent.auth, 'x-request-id': 'trace-me-agent-1' } });
      expect(history.status).toBe(200);
      expect(loaded).toEqual(new Set(['sdk-trace-base', 'exporter-trace-otlp-http', 'resources']));
    } finally {
      // Stopping exports what the batch still holds.
      await Promise.all([account.stop(), agent.stop()]);
    }
    const byRequest = (id: string) => receiver.spans.find((span) => attribute(span, 'request.id') === id);
    const signIn = byRequest('trace-me-guest-1');
    expect(signIn).toBeDefined();
    expect(signIn?.name).toBe('POST /auth/guest');
    expect(attribute(signIn!, 'http.response.status_code')).toBe(200);
    // The caller's traceparent made it a child of the caller's span.
    expect(signIn?.traceId).toBe(parentTrace);
    expect(signIn?.parentSpanId).toBe('00f067aa0ba902b7');
    const read = byRequest('trace-me-agent-1');
    expect(read?.name).toBe('GET /chat/{chat_id}/history');
    expect(JSON.stringify(receiver.spans)).not.toContain('secret-chat-id');
    expect(receiver.services).toEqual(new Set(['agent-accounts-account', 'agent-accounts-agent']));
  });
});
