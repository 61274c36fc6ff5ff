import { hookCommand } from '../../cli/hook-command.js';

export default hookCommand('epilog');
