export { commandsFolder, loadLuaCommands } from './lua-commands';
export type { LuaCommand } from './lua-commands';
export { jsonReply, LuaScripts, luaList } from './lua-scripts';
export type { Script, ScriptRedis, ScriptSpec } from './lua-scripts';
