import path from 'node:path';
import { commandsFolder, LuaScripts } from '@taskapi/redis-scripts';

/** The API's Redis commands (src/commands): rate limits, the login throttle, queue signals. */
export const apiScripts = new LuaScripts(commandsFolder(path.join(__dirname, '../commands'), 'api'), 'taskapi_api');
