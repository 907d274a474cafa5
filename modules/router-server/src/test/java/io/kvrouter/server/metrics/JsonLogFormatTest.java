package io.kvrouter.server.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

/**
 * The production logback.xml with {@code KVROUTER_LOG_FORMAT=json}: every event is one line holding one JSON object,
 * a multi-line message and a stack trace included; without it, the text pattern.
 */
class JsonLogFormatTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void jsonFormatWritesOneParseableObjectPerEvent() throws Exception {
    List<String> lines = logThroughProductionConfig("json");

    assertThat(lines).hasSize(3);
    List<JsonNode> events = new ArrayList<>();
    for (String line : lines) {
      events.add(JSON.readTree(line));
    }
    assertThat(events).allSatisfy(event -> {
      assertThat(event.path("@timestamp").asText()).isNotEmpty();
      assertThat(event.path("logger_name").asText()).isEqualTo("kvrouter.test");
      assertThat(event.path("thread_name").asText()).isNotEmpty();
    });
    assertThat(events.get(0).path("level").asText()).isEqualTo("INFO");
    assertThat(events.get(0).path("message").asText()).isEqualTo("a node started on 127.0.0.1:50051");
    assertThat(events.get(1).path("message").asText()).isEqualTo("two\nlines with \"quotes\"");
    assertThat(events.get(2).path("level").asText()).isEqualTo("WARN");
    assertThat(events.get(2).path("stack_trace").asText()).contains("IllegalStateException: broken");
  }

  @Test
  void textIsTheDefaultFormat() throws Exception {
    List<String> lines = logThroughProductionConfig(null);

    assertThat(lines.get(0)).matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  kvrouter.test - a node started on .*");
  }

  /** Configures a fresh Logback context from main's logback.xml and returns the lines its console appender wrote. */
  private static List<String> logThroughProductionConfig(String format) throws Exception {
    PrintStream original = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    LoggerContext context = new LoggerContext();
    context.setMDCAdapter(new LogbackMDCAdapter());
    try {
      System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
      if (format != null) {
        context.putProperty("KVROUTER_LOG_FORMAT", format);
      }
      JoranConfigurator configurator = new JoranConfigurator();
      configurator.setContext(context);
      // main's logback.xml, not logback-test.xml, which the test classpath puts first
      configurator.doConfigure(mainLogbackXml());
      Logger log = context.getLogger("kvrouter.test");
      log.info("a node started on {}:{}", "127.0.0.1", 50051);
      log.info("two\nlines with \"quotes\"");
      log.warn("a failure", new IllegalStateException("broken"));
    } finally {
      context.stop();
      System.setOut(original);
    }
    String out = captured.toString(StandardCharsets.UTF_8);
    return format == null ? out.lines().toList() : out.lines().filter(l -> !l.isBlank()).toList();
  }

  private static java.net.URL mainLogbackXml() throws Exception {
    var resources = JsonLogFormatTest.class.getClassLoader().getResources("logback.xml");
    while (resources.hasMoreElements()) {
      java.net.URL url = resources.nextElement();
      if (url.getPath().contains("/classes/") && !url.getPath().contains("test-classes")) {
        return url;
      }
    }
    throw new AssertionError("router-server's main logback.xml is not on the classpath");
  }
}
