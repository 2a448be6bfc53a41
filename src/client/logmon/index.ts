// The host's log collector for external driver plugins (Nomad's logmon):
// FIFOs handed to the driver, read into rotated files by a detached process.
export { startLogMonitor, stopLogMonitor, logFifos, LogMonitorError, type LogMonitorErrorCode, type LogMonitorTarget, type LogFifos } from './log-monitor.js';
