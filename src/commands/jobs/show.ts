import { oclifCommand } from '../../cli/oclif-command.js';

export default oclifCommand('jobs show');
