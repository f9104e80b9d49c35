import { Hono } from 'hono';

/**
 * The scheduler service (Nomad conventions: plain-text errors). Its ACL and event endpoints arrive with
 * their own issue; until then it answers its health check and 404 elsewhere.
 */
export function createSchedulerApp(): Hono {
  const app = new Hono();
  app.get('/v1/agent/health', (c) => c.json({ server: { ok: true, message: 'ok' } }));
  app.notFound((c) => c.text(`Invalid URL path: ${c.req.path}`, 404));
  return app;
}
