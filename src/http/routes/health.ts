// Liveness and readiness, open even with authentication on.
import type { FastifyPluginAsync } from 'fastify';
import { healthSchema, readinessSchema } from '../schemas/health.ts';
import { transportErrorResponses } from '../schemas/responses.ts';
import type { ReadinessCheck, RouteOptions } from '../services.ts';
import type { ZodTypeProvider } from '../zod-compilers.ts';

/** A dependency that does not answer within this time counts as down, so readiness itself never hangs. */
export const READINESS_TIMEOUT_MS = 2_000;

async function probeState(probe: ReadinessCheck): Promise<'up' | 'down'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    // After a turn of the event loop: when a long synchronous task held the loop, the timer fires before the answer
    // that came meanwhile is read, and a dependency that answered in a millisecond would count as down.
    timer = setTimeout(() => setImmediate(() => resolve(false)), READINESS_TIMEOUT_MS);
  });
  try {
    return (await Promise.race([Promise.resolve().then(probe), timeout])) ? 'up' : 'down';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

/** Each dependency's details; one that fails to describe itself is left out rather than failing readiness. */
function readinessDetails(sources: Readonly<Record<string, () => unknown>>): { details?: Record<string, unknown> } {
  const details: Record<string, unknown> = {};
  for (const [name, describe] of Object.entries(sources)) {
    try {
      details[name] = describe();
    } catch {
      // A describer that throws says nothing; the check above still decides up or down.
    }
  }
  return Object.keys(details).length === 0 ? {} : { details };
}

export const healthRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const config = { scope: 'public' } as const;

  routes.get(
    '/health',
    {
      config,
      schema: {
        tags: ['health'],
        summary: 'Liveness: the process is up',
        security: [],
        response: { 200: healthSchema, ...transportErrorResponses() },
      },
    },
    async () => ({ status: 'healthy' as const, version: services.version }),
  );

  routes.get(
    '/health/ready',
    {
      config,
      schema: {
        tags: ['health'],
        summary: 'Readiness: every dependency can serve',
        // Open even with authentication on, so the document must not ask for a key.
        security: [],
        response: { 200: readinessSchema, 503: readinessSchema, ...transportErrorResponses() },
      },
    },
    async (_request, reply) => {
      const checks: Record<string, 'up' | 'down'> = {};
      const probes = { database: () => services.store.ping(), engine: () => services.catalog.engine !== undefined, ...services.readiness };
      await Promise.all(
        Object.entries(probes).map(async ([name, probe]) => {
          checks[name] = await probeState(probe);
        }),
      );
      const down = Object.keys(checks).filter((name) => checks[name] === 'down');
      if (services.draining()) down.unshift('shutting down');
      const details = readinessDetails(services.readinessDetails);
      if (down.length === 0) return { status: 'ready' as const, checks, ...details };
      return reply.code(503).send({
        status: 'unavailable' as const,
        checks,
        ...details,
        detail: `Not ready: ${down.join(', ')}.`,
        error_code: 'UNAVAILABLE' as const,
      });
    },
  );
};
