// Routes kafkajs's own log lines into the service's pino logger, one child per kafkajs namespace.
import { type logCreator, logLevel } from 'kafkajs';
import type { Logger } from 'pino';

/** The kafkajs level to ask for so that nothing pino would print is dropped early. */
export function kafkajsLevel(level: string): logLevel {
  switch (level) {
    case 'trace':
    case 'debug':
      return logLevel.DEBUG;
    case 'info':
      return logLevel.INFO;
    case 'warn':
      return logLevel.WARN;
    case 'silent':
      return logLevel.NOTHING;
    default:
      return logLevel.ERROR;
  }
}

/** A kafkajs logCreator writing through pino: kafkajs fields become pino fields, its message the pino message. */
export function pinoLogCreator(logger: Logger): logCreator {
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _timestamp, logger: _name, ...fields } = log;
      const child = { kafkajs: namespace, ...fields };
      if (level === logLevel.ERROR) logger.error(child, message);
      else if (level === logLevel.WARN) logger.warn(child, message);
      else if (level === logLevel.INFO) logger.info(child, message);
      else logger.debug(child, message);
    };
}
