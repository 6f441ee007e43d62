// What `npm run dev` hands the service: the port asked for, and only the endpoints of the stack it brought up.
import { ENDPOINT_VARIABLES } from './local-stack/index.ts';

/** PORT as given (0: any free port), undefined when unset; anything else is an error naming the value, as the service's. */
export function requestedPort(given: string | undefined): number | undefined {
  if (given === undefined || given.trim() === '') return undefined;
  const port = Number(given);
  if (!/^\s*\d+\s*$/.test(given) || port > 65_535) throw new Error(`PORT must be a whole number from 0 to 65535 (got "${given}")`);
  return port;
}

/** The environment without the endpoint variables: a service left out of LOCAL_STACK_SERVICES stays out, even if exported. */
export function withoutEndpoints(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const kept = { ...env };
  for (const variable of Object.values(ENDPOINT_VARIABLES)) delete kept[variable];
  return kept;
}
