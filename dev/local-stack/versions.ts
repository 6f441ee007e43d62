// Versions of everything the stack runs, in one place: the process path, the container path and docker-compose.yml agree.

export const KAFKA_VERSION = '3.9.2';
/** Kafka 3.9 logs through SLF4J 1.7; reload4j is the binding its own distribution ships. */
export const SLF4J_VERSION = '1.7.36';
export const RELOAD4J_VERSION = '1.2.25';
export const APICURIO_VERSION = '3.3.3';
/** Apicurio's Confluent-compatible API, which @kafkajs/confluent-schema-registry speaks. */
export const CCOMPAT_PATH = '/apis/ccompat/v7';
