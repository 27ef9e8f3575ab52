import path from 'node:path';
import { commandsFolder, LuaScripts } from '@taskapi/redis-scripts';

/** The domain's Redis commands (src/commands): status markers, progress, model predictions. */
export const domainScripts = new LuaScripts(commandsFolder(path.join(__dirname, 'commands'), 'domain'), 'taskapi_domain');
