// The store contract on embedded PGlite, in memory, opened once for this file.
import { openTestStore } from '../../helpers/databases.ts';
import { describeStoreContract } from './store-contract.ts';

describeStoreContract('PGlite', () => openTestStore('pglite'));
