# Sourced by the project's launchers. Logback prints nothing of its own (every logback.xml installs a
# NopStatusListener); KVROUTER_LOG_STATUS=on makes it print how it configured itself, through Logback's own switch.
# Sets kvrouter_log_status_opts, the JVM flag to pass (empty when off).
case "${KVROUTER_LOG_STATUS:-off}" in
  on) kvrouter_log_status_opts="-Dlogback.statusListenerClass=ch.qos.logback.core.status.OnConsoleStatusListener" ;;
  off) kvrouter_log_status_opts="" ;;
  *) echo "KVROUTER_LOG_STATUS must be on or off, got '${KVROUTER_LOG_STATUS}'" >&2; exit 2 ;;
esac
