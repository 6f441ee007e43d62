import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { openRedisSessionStore } from '../../../src/sessions/redis-session-store.ts';
import { sessionStoreContract } from './session-store-contract.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `test:${randomUUID()}:`;

sessionStoreContract('Redis', {
  open: () => openRedisSessionStore({ url, keyPrefix: prefix }),
  cleanup: async () => {
    const admin = new Redis(url);
    try {
      let cursor = '0';
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await admin.del(...keys);
      } while (cursor !== '0');
    } finally {
      admin.disconnect();
    }
  },
});
