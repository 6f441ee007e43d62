// Reads what the environment says about the stack: endpoints to use as given, which services, whether containers may run.
import { SERVICE_NAMES, type ServiceName } from './types.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The variable that names each service's endpoint; the service itself reads the same variables. */
export const ENDPOINT_VARIABLES = {
  kafka: 'KAFKA_BROKERS',
  registry: 'SCHEMA_REGISTRY_URL',
  redis: 'REDIS_URL',
  postgres: 'DATABASE_URL',
} as const satisfies Record<ServiceName, string>;

const URL_SCHEMES: Record<Exclude<ServiceName, 'kafka'>, RegExp> = {
  registry: /^https?:$/,
  redis: /^rediss?:$/,
  postgres: /^postgres(ql)?:$/,
};

/** Endpoints set in the environment for the requested services; a malformed one is an error naming the variable. */
export function endpointsFromEnv(env: Env, services: readonly ServiceName[]): Partial<Record<ServiceName, string>> {
  const endpoints: Partial<Record<ServiceName, string>> = {};
  for (const service of services) {
    const variable = ENDPOINT_VARIABLES[service];
    const value = env[variable]?.trim();
    if (value === undefined || value === '') continue;
    if (service === 'kafka') {
      const brokers = value.split(',').map((broker) => broker.trim());
      const bad = brokers.find((broker) => !/^[^\s:/,]+:\d{1,5}$/.test(broker));
      if (bad !== undefined) throw new Error(`${variable} must be host:port[,host:port...]; "${bad}" is not`);
      endpoints.kafka = brokers.join(',');
    } else {
      const scheme = URL_SCHEMES[service];
      if (!URL.canParse(value) || !scheme.test(new URL(value).protocol)) {
        throw new Error(`${variable} must be a URL with scheme ${scheme.source.replaceAll(/[\\^$]/g, '')}; got "${redact(value)}"`);
      }
      endpoints[service] = value;
    }
  }
  return endpoints;
}

/** Requested services: the option wins, then LOCAL_STACK_SERVICES (comma-separated), else all four. */
export function requestedServices(option: readonly string[] | undefined, env: Env): ServiceName[] {
  const fromEnv = env.LOCAL_STACK_SERVICES?.trim();
  const names = option ?? (fromEnv ? fromEnv.split(',').map((name) => name.trim()) : [...SERVICE_NAMES]);
  const unknown = names.filter((name) => !(SERVICE_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    const from = option === undefined ? 'LOCAL_STACK_SERVICES' : 'services';
    throw new Error(
      `${from} names unknown service(s) ${unknown.map((name) => `"${name}"`).join(', ')}; known: ${SERVICE_NAMES.join(', ')}`,
    );
  }
  return SERVICE_NAMES.filter((name) => names.includes(name));
}

/** LOCAL_STACK_CONTAINERS=false (or 0, no, never) keeps the stack on local processes even where Docker runs. */
export function containersAllowed(env: Env): boolean {
  return !/^(0|false|no|never|off)$/i.test(env.LOCAL_STACK_CONTAINERS?.trim() ?? '');
}

/** Hides a password in a URL before it reaches a log or an error. */
export function redact(value: string): string {
  // Textual, so the URL is otherwise shown exactly as given (no normalisation by the URL class).
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, '$1***@');
}
