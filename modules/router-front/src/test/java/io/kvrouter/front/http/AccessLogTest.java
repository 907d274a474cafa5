package io.kvrouter.front.http;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import net.logstash.logback.encoder.LogstashEncoder;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/** The access-log line in text and, through the encoder router-server's JSON log format uses, as JSON fields. */
class AccessLogTest {
  @Test
  void aLineCarriesItsFieldsInTextAndAsJsonFieldsAndLeavesNoMdcBehind() throws Exception {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    Logger logger = context.getLogger("io.kvrouter.front.access");
    LogstashEncoder encoder = new LogstashEncoder();
    encoder.setContext(context);
    encoder.start();
    List<String> json = new ArrayList<>();
    List<String> text = new ArrayList<>();
    AppenderBase<ILoggingEvent> appender = new AppenderBase<>() {
      @Override
      protected void append(ILoggingEvent event) {
        json.add(new String(encoder.encode(event), StandardCharsets.UTF_8));
        text.add(event.getFormattedMessage());
      }
    };
    appender.setContext(context);
    appender.start();
    Level before = logger.getLevel();
    logger.setLevel(Level.INFO);
    logger.addAppender(appender);
    try {
      new AccessLog().write(new AccessLog.Entry("POST", "/v1/chat/completions", 200, "org/m", "w1", "p1", 2, 1234, 5678,
          910, "client-1", "s-9", "front-client-1-ab/2", "ok"));
    } finally {
      logger.detachAppender(appender);
      logger.setLevel(before);
    }
    assertThat(text).singleElement().isEqualTo("POST /v1/chat/completions 200 model=org/m worker=w1 prefill_worker=p1 "
        + "attempts=2 "
        + "ttft_us=1234 duration_us=5678 bytes=910 request_id=client-1 session=s-9 booking_id=front-client-1-ab/2 "
        + "outcome=ok");
    JsonNode line = new ObjectMapper().readTree(json.get(0));
    assertThat(line.get("logger_name").asText()).isEqualTo("io.kvrouter.front.access");
    assertThat(line.get("http_status").asText()).isEqualTo("200");
    assertThat(line.get("model").asText()).isEqualTo("org/m");
    assertThat(line.get("worker").asText()).isEqualTo("w1");
    assertThat(line.get("prefill_worker").asText()).isEqualTo("p1");
    assertThat(line.get("attempts").asText()).isEqualTo("2");
    assertThat(line.get("ttft_us").asText()).isEqualTo("1234");
    assertThat(line.get("booking_id").asText()).isEqualTo("front-client-1-ab/2");
    assertThat(line.get("outcome").asText()).isEqualTo("ok");
    assertThat(MDC.getCopyOfContextMap() == null || MDC.getCopyOfContextMap().isEmpty()).isTrue();
  }
}
