package io.kvrouter.tokenizer;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.AdvancedFilter;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.objects.SafeString;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
import java.time.Clock;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jinjava.javax.el.CompositeELResolver;

/**
 * A HuggingFace chat template rendered as transformers' {@code apply_chat_template} renders it for vLLM's
 * {@code /v1/chat/completions}: Jinjava configured like transformers' environment
 * ({@code ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)} with {@code loopcontrols}, the
 * {@code generation} block, {@code raise_exception}, {@code strftime_now}, and {@code tojson} as
 * {@code json.dumps(ensure_ascii=False)}), plus the Python that templates call on values ({@code str} methods,
 * {@code dict.get}, negative string indexes), and the context transformers passes: {@code messages},
 * {@code tools}, {@code documents}, {@code add_generation_prompt}, the special tokens of
 * {@code tokenizer_config.json} ({@code bos_token}, {@code eos_token}, ...) and the request's extra keys
 * ({@code chat_template_kwargs}).
 *
 * <p>Messages are first normalised as vLLM's {@code parse_chat_messages} does, so the text is the engine's: content
 * {@code null}, a string or a list of parts becomes a string (text parts joined by {@code "\n"}) for templates
 * that print content, or a list of {@code {"type": "text", "text": ...}} parts for templates that loop over it
 * (vLLM's "openai" content format, detected from the template the way vLLM detects it); tool-call
 * {@code arguments} given as a JSON string become objects; a tool message's text parts are joined.
 *
 * <p>Thread-safe: the parsed template is shared, each render has its own interpreter. Renders are bounded in output
 * size and nesting.
 */
public final class ChatTemplate {
  /** Largest rendered prompt (characters); beyond it the render fails instead of growing without bound. */
  public static final long MAX_OUTPUT_CHARS = 16L << 20;

  private static final String CLOCK_KEY = "__kvrouter_clock__";
  private static final Jinjava JINJAVA = newJinjava();

  /** vLLM's two content formats (its {@code chat_template_content_format}). */
  public enum ContentFormat {
    /** Content is a string (text parts joined with {@code "\n"}). */
    STRING,
    /** Content is a list of {@code {"type": "text", "text": ...}} parts. */
    OPENAI
  }

  private final String source;
  private final Node root;
  private final Map<String, Object> specialTokens;
  private final ContentFormat contentFormat;
  private final Clock clock;

  private ChatTemplate(String source, Node root, Map<String, Object> specialTokens, ContentFormat contentFormat,
                       Clock clock) {
    this.source = source;
    this.root = root;
    this.specialTokens = specialTokens;
    this.contentFormat = contentFormat;
    this.clock = clock;
  }

  /**
   * Parses a template. {@code specialTokens} are the string-valued special tokens of {@code tokenizer_config.json}
   * ({@code bos_token}, {@code eos_token}, {@code unk_token}, {@code pad_token}, ...), passed to every render as
   * transformers passes its special tokens map.
   *
   * @throws TemplateException ({@link TemplateException.Kind#UNSUPPORTED}) when the template does not parse
   */
  public static ChatTemplate of(String source, Map<String, ?> specialTokens) {
    return of(source, specialTokens, Clock.systemDefaultZone());
  }

  /** As {@link #of(String, Map)} with the clock {@code strftime_now} reads (tests fix it). */
  public static ChatTemplate of(String source, Map<String, ?> specialTokens, Clock clock) {
    Objects.requireNonNull(source, "source");
    // jinja2 drops one trailing newline of the source (keep_trailing_newline=False); Jinjava keeps it
    String code = source.endsWith("\r\n") ? source.substring(0, source.length() - 2)
        : source.endsWith("\n") ? source.substring(0, source.length() - 1) : source;
    JinjavaInterpreter interpreter = JINJAVA.newInterpreter();
    Node root;
    JinjavaInterpreter.pushCurrent(interpreter);
    try {
      root = interpreter.parse(JinjaRewriter.rewrite(code));
    } catch (RuntimeException e) {
      throw new TemplateException(TemplateException.Kind.UNSUPPORTED, "the chat template does not parse: "
          + e.getMessage(), e);
    } finally {
      JinjavaInterpreter.popCurrent();
    }
    for (TemplateError error : interpreter.getErrorsCopy()) {
      if (error.getSeverity() == TemplateError.ErrorType.FATAL) {
        throw new TemplateException(TemplateException.Kind.UNSUPPORTED, "the chat template does not parse: "
            + describe(error));
      }
    }
    Map<String, Object> tokens = new LinkedHashMap<>();
    if (specialTokens != null) {
      specialTokens.forEach(tokens::put);
    }
    return new ChatTemplate(source, root, Map.copyOf(tokens), detectContentFormat(source), clock);
  }

  public String source() {
    return source;
  }

  public ContentFormat contentFormat() {
    return contentFormat;
  }

  /**
   * Renders a conversation: {@code messages} as the request's JSON holds them (maps with {@code role},
   * {@code content} and, for assistant and tool messages, {@code tool_calls}, {@code tool_call_id}, {@code name}).
   * {@code extraContext} holds {@code tools} and {@code documents} when the request has them, and the request's
   * {@code chat_template_kwargs}; its keys override the defaults (absent {@code tools}/{@code documents} are
   * {@code None}, as transformers passes them).
   *
   * @throws TemplateException with {@link TemplateException.Kind#REJECTED} when the template calls
   *     {@code raise_exception}, {@link TemplateException.Kind#INVALID_INPUT} for messages that are not a
   *     conversation, {@link TemplateException.Kind#UNSUPPORTED} when the template fails here
   */
  public String render(List<Map<String, Object>> messages, boolean addGenerationPrompt,
                       Map<String, Object> extraContext) {
    Map<String, Object> context = new LinkedHashMap<>(specialTokens);
    context.put("messages", normalizeMessages(messages, contentFormat));
    context.put("tools", null);
    context.put("documents", null);
    context.put("add_generation_prompt", addGenerationPrompt);
    if (extraContext != null) {
      context.putAll(extraContext);
    }
    context.put(CLOCK_KEY, clock);
    JinjavaInterpreter interpreter = JINJAVA.newInterpreter();
    interpreter.getContext().putAll(context);
    String output;
    JinjavaInterpreter.pushCurrent(interpreter);
    try {
      output = interpreter.render(root);
    } catch (TemplateException e) {
      throw e;
    } catch (RuntimeException e) {
      TemplateRejection rejection = rejection(e);
      if (rejection != null) {
        throw rejected(rejection);
      }
      throw new TemplateException(TemplateException.Kind.UNSUPPORTED, "the chat template failed: " + e, e);
    } finally {
      JinjavaInterpreter.popCurrent();
    }
    for (TemplateError error : interpreter.getErrorsCopy()) {
      TemplateRejection rejection = rejection(error.getException());
      if (rejection != null) {
        throw rejected(rejection);
      }
    }
    for (TemplateError error : interpreter.getErrorsCopy()) {
      if (error.getSeverity() == TemplateError.ErrorType.FATAL) {
        throw new TemplateException(TemplateException.Kind.UNSUPPORTED, "the chat template failed: "
            + describe(error));
      }
    }
    return output;
  }

  private static TemplateException rejected(TemplateRejection rejection) {
    return new TemplateException(TemplateException.Kind.REJECTED, rejection.getMessage());
  }

  private static TemplateRejection rejection(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof TemplateRejection r) {
        return r;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  private static String describe(TemplateError error) {
    String message = error.getMessage();
    if (message != null && message.length() > 300) {
      message = message.substring(0, 300) + "...";
    }
    return message + (error.getLineno() > 0 ? " (line " + error.getLineno() + ")" : "");
  }

  // ---------------------------------------------------------------------------------------------------------------
  // vLLM's message normalisation (vllm/entrypoints/chat_utils.py, _parse_chat_message_content and
  // _postprocess_messages), for text content.

  private static final Set<String> TEXT_PART_TYPES = Set.of("text", "input_text", "output_text", "refusal",
      "thinking");

  /** The normalisation with string content, media parts left out: the text approximate mode hashes. */
  static List<Map<String, Object>> normalizeTextOnly(List<Map<String, Object>> messages) {
    return normalizeMessages(messages, ContentFormat.STRING, true);
  }

  static List<Map<String, Object>> normalizeMessages(List<Map<String, Object>> messages, ContentFormat format) {
    return normalizeMessages(messages, format, false);
  }

  private static List<Map<String, Object>> normalizeMessages(List<Map<String, Object>> messages,
                                                             ContentFormat format, boolean skipMedia) {
    if (messages == null) {
      throw invalid("messages must be a list of messages");
    }
    List<Map<String, Object>> conversation = new ArrayList<>(messages.size());
    int index = 0;
    for (Object item : (List<?>) messages) {
      if (!(item instanceof Map<?, ?> message)) {
        throw invalid("messages[" + index + "] is not an object");
      }
      Object role = message.get("role");
      if (!(role instanceof String)) {
        throw invalid("messages[" + index + "] has no role");
      }
      List<String> texts = texts(message.get("content"), index, skipMedia);
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("role", role);
      if (format == ContentFormat.OPENAI) {
        List<Map<String, Object>> parts = new ArrayList<>(texts.size());
        for (String text : texts) {
          Map<String, Object> part = new LinkedHashMap<>();
          part.put("type", "text");
          part.put("text", text);
          parts.add(part);
        }
        out.put("content", parts);
      } else {
        out.put("content", String.join("\n", texts));
      }
      if ("assistant".equals(role)) {
        Object toolCalls = message.get("tool_calls");
        if (toolCalls instanceof List<?> calls && !calls.isEmpty()) {
          out.put("tool_calls", normalizeToolCalls(calls));
        }
        Object reasoning = message.get("reasoning");
        if (reasoning != null) {
          out.put("reasoning", reasoning);
          out.put("reasoning_content", reasoning);
        }
      } else if ("tool".equals(role)) {
        if (message.containsKey("tool_call_id")) {
          out.put("tool_call_id", message.get("tool_call_id"));
        }
        if (out.get("content") instanceof List<?>) {
          out.put("content", String.join("\n", texts));
        }
      }
      if (message.get("name") instanceof String name) {
        out.put("name", name);
      }
      conversation.add(out);
      index++;
    }
    return conversation;
  }

  private static List<String> texts(Object content, int index, boolean skipMedia) {
    List<String> texts = new ArrayList<>();
    if (content == null) {
      return texts;
    }
    if (content instanceof String s) {
      texts.add(s);
      return texts;
    }
    if (!(content instanceof List<?> parts)) {
      throw invalid("messages[" + index + "].content must be a string or a list of parts");
    }
    for (Object part : parts) {
      if (part instanceof String s) {
        texts.add(s);
        continue;
      }
      if (!(part instanceof Map<?, ?> map)) {
        throw invalid("messages[" + index + "].content has a part that is neither a string nor an object");
      }
      Object type = map.get("type");
      if (!(type instanceof String typeName)) {
        throw invalid("messages[" + index + "].content has a part without a type");
      }
      if (TEXT_PART_TYPES.contains(typeName)) {
        String key = switch (typeName) {
          case "refusal" -> "refusal";
          case "thinking" -> "thinking";
          default -> "text";
        };
        Object text = map.get(key);
        if (text != null) { // vLLM skips a text part without text
          texts.add(text.toString());
        }
      } else if (!skipMedia) {
        // media parts become model-specific placeholders in the engine: the front routes such a request without
        // the template rather than guess them
        throw new TemplateException(TemplateException.Kind.UNSUPPORTED, "messages[" + index + "] has a '"
            + Inputs.echo(typeName) + "' content part: only text parts are rendered for routing");
      }
    }
    return texts;
  }

  private static List<Object> normalizeToolCalls(List<?> calls) {
    List<Object> out = new ArrayList<>(calls.size());
    for (Object call : calls) {
      if (call instanceof Map<?, ?> map && map.get("function") instanceof Map<?, ?> function) {
        Map<String, Object> copy = new LinkedHashMap<>();
        map.forEach((k, v) -> copy.put(String.valueOf(k), v));
        Map<String, Object> fn = new LinkedHashMap<>();
        function.forEach((k, v) -> fn.put(String.valueOf(k), v));
        Object arguments = fn.get("arguments");
        if (arguments instanceof String s) {
          fn.put("arguments", parseArguments(s));
        } else if (!(arguments instanceof Map<?, ?>) && !(arguments instanceof List<?>)) {
          fn.put("arguments", new LinkedHashMap<>());
        }
        copy.put("function", fn);
        out.add(copy);
      } else {
        out.add(call);
      }
    }
    return out;
  }

  /** vLLM parses tool-call arguments sent as a JSON string; one that is not valid JSON becomes {@code {}}. */
  private static Object parseArguments(String json) {
    try {
      Object parsed = Inputs.JSON.readValue(json, Object.class);
      return parsed == null ? new LinkedHashMap<>() : parsed;
    } catch (Exception e) {
      return new LinkedHashMap<>();
    }
  }

  private static TemplateException invalid(String message) {
    return new TemplateException(TemplateException.Kind.INVALID_INPUT, message);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // vLLM's content-format detection (chat_utils.py, _detect_content_format): a template that loops over a message's
  // content, for a message taken from `messages` (directly, through a variable set from it, or a slice of it), gets
  // content as a list of parts; any other gets a string.

  private static final Pattern FOR_TAG = Pattern.compile(
      "\\{%-?\\+?\\s*for\\s+(\\w+)(?:\\s*,\\s*\\w+)?\\s+in\\s+(.+?)\\s*-?%}", Pattern.DOTALL);
  private static final Pattern SET_TAG = Pattern.compile(
      "\\{%-?\\+?\\s*set\\s+(\\w+)\\s*=\\s*(.+?)\\s*-?%}", Pattern.DOTALL);

  static ContentFormat detectContentFormat(String source) {
    String code = source.replaceAll("(?s)\\{#.*?#}", "");
    Set<String> messageLists = new HashSet<>();
    messageLists.add("messages");
    boolean grew = true;
    while (grew) { // variables assigned from the message list, transitively ({% set loop_messages = messages[1:] %})
      grew = false;
      Matcher set = SET_TAG.matcher(code);
      while (set.find()) {
        if (!messageLists.contains(set.group(1)) && accesses(set.group(2), messageLists, null)) {
          messageLists.add(set.group(1));
          grew = true;
        }
      }
    }
    Set<String> messageVars = new HashSet<>();
    Matcher loop = FOR_TAG.matcher(code);
    while (loop.find()) {
      if (accesses(loop.group(2), messageLists, null)) {
        messageVars.add(loop.group(1));
      }
    }
    if (messageVars.isEmpty()) {
      return ContentFormat.STRING;
    }
    loop = FOR_TAG.matcher(code);
    while (loop.find()) {
      if (accesses(loop.group(2), messageVars, "content")) {
        return ContentFormat.OPENAI;
      }
    }
    return ContentFormat.STRING;
  }

  /**
   * Whether an expression is (a filter or test applied to, or a slice of) a variable of {@code names}, or with
   * {@code key} that variable's {@code key} item or attribute: vLLM's {@code _is_var_or_elems_access}.
   */
  private static boolean accesses(String expression, Set<String> names, String key) {
    String e = expression.trim();
    int pipe = topLevelIndex(e, '|');
    if (pipe > 0) {
      e = e.substring(0, pipe).trim();
    }
    while (e.startsWith("(") && e.endsWith(")")) {
      e = e.substring(1, e.length() - 1).trim();
    }
    Matcher m = Pattern.compile("^(\\w+)(.*)$", Pattern.DOTALL).matcher(e);
    if (!m.matches() || !names.contains(m.group(1))) {
      return false;
    }
    String rest = m.group(2).trim();
    if (key == null) {
      return rest.isEmpty() || rest.matches("\\[[^\\]]*:[^\\]]*\\]");
    }
    String slice = "(\\[[^\\]]*:[^\\]]*\\])?";
    return rest.matches("\\[\\s*(['\"])" + key + "\\1\\s*\\]" + slice) || rest.matches("\\." + key + slice);
  }

  private static int topLevelIndex(String s, char target) {
    int depth = 0;
    char quote = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '(' || c == '[' || c == '{') {
        depth++;
      } else if (c == ')' || c == ']' || c == '}') {
        depth--;
      } else if (c == target && depth == 0) {
        return i;
      }
    }
    return -1;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The environment: transformers' filters, globals and extensions on Jinjava.

  private static Jinjava newJinjava() {
    CompositeELResolver resolver = new CompositeELResolver();
    resolver.add(new PythonMethodResolver());
    resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
    JinjavaConfig config = JinjavaConfig.newBuilder()
        .withTrimBlocks(true)
        .withLstripBlocks(true)
        .withElResolver(resolver)
        .withMaxOutputSize(MAX_OUTPUT_CHARS)
        .withMaxRenderDepth(10)
        .withMaxMacroRecursionDepth(20)
        .withEnableRecursiveMacroCalls(true)
        .withLegacyOverrides(LegacyOverrides.newBuilder()
            .withUsePyishObjectMapper(true)
            .withUseNaturalOperatorPrecedence(true)
            .withKeepNullableLoopValues(true)
            .withUseTrimmingForNotesAndExpressions(true)
            .build())
        .build();
    Jinjava jinjava = new Jinjava(config);
    jinjava.registerFilter(new ToJsonFilter());
    jinjava.registerFilter(new TrimFilter());
    jinjava.registerFunction(new ELFunctionDefinition("", "raise_exception", ChatTemplate.class, "raiseException",
        Object.class));
    jinjava.registerFunction(new ELFunctionDefinition("", "strftime_now", ChatTemplate.class, "strftimeNow",
        String.class));
    jinjava.registerFilter(new ItemsFilter());
    jinjava.registerExpTest(new PythonTest("iterable", v -> v instanceof Iterable<?> || v instanceof Map<?, ?>
        || v instanceof CharSequence || v instanceof SafeString || (v != null && v.getClass().isArray())));
    jinjava.registerExpTest(new PythonTest("sequence", v -> v instanceof List<?> || v instanceof Map<?, ?>
        || v instanceof CharSequence || v instanceof SafeString || (v != null && v.getClass().isArray())));
    jinjava.registerTag(new GenerationTag());
    return jinjava;
  }

  /** transformers' {@code raise_exception}: the template refuses the conversation. */
  public static Object raiseException(Object message) {
    throw new TemplateRejection(String.valueOf(message));
  }

  /** transformers' {@code strftime_now}: {@code datetime.now().strftime(format)}. */
  public static String strftimeNow(String format) {
    Clock clock = Clock.systemDefaultZone();
    JinjavaInterpreter current = JinjavaInterpreter.getCurrent();
    if (current != null && current.getContext().get(CLOCK_KEY) instanceof Clock c) {
      clock = c;
    }
    return PythonStrings.strftime(ZonedDateTime.now(clock), format);
  }

  /** What {@code raise_exception} throws through Jinjava, recognised after the render. */
  static final class TemplateRejection extends RuntimeException {
    private static final long serialVersionUID = 1L;

    TemplateRejection(String message) {
      super(message, null, false, false);
    }
  }

  /** {@code tojson(ensure_ascii=False, indent=None, separators=None, sort_keys=False)} as transformers binds it. */
  static final class ToJsonFilter implements AdvancedFilter {
    @Override
    public String getName() {
      return "tojson";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
      Object ensureAscii = kwargs.getOrDefault("ensure_ascii", args.length > 0 ? args[0] : false);
      Object indent = kwargs.getOrDefault("indent", args.length > 1 ? args[1] : null);
      Object separators = kwargs.getOrDefault("separators", args.length > 2 ? args[2] : null);
      Object sortKeys = kwargs.getOrDefault("sort_keys", args.length > 3 ? args[3] : false);
      return PythonJson.dumps(var, indent, separators instanceof List<?> l ? l : null, Boolean.TRUE.equals(sortKeys),
          Boolean.TRUE.equals(ensureAscii));
    }
  }

  /** Jinja's {@code trim(chars=None)}: Python's {@code str.strip}. */
  static final class TrimFilter implements AdvancedFilter {
    @Override
    public String getName() {
      return "trim";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
      Object chars = kwargs.getOrDefault("chars", args.length > 0 ? args[0] : null);
      return PythonStrings.strip(var == null ? "" : var.toString(), chars, true, true);
    }
  }

  /** jinja2's {@code items} filter: a mapping's (key, value) pairs; undefined gives none. */
  static final class ItemsFilter implements Filter {
    @Override
    public String getName() {
      return "items";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
      List<List<Object>> pairs = new ArrayList<>();
      if (var == null) {
        return pairs;
      }
      if (!(var instanceof Map<?, ?> map)) {
        throw new IllegalArgumentException("items: can only get item pairs from a mapping, not "
            + PythonJson.typeName(var));
      }
      map.forEach((k, v) -> pairs.add(java.util.Arrays.asList(k, v)));
      return pairs;
    }
  }

  /** A jinja2 test with Python's semantics where Jinjava's differs (a string is iterable and a sequence). */
  static final class PythonTest implements ExpTest {
    private final String name;
    private final java.util.function.Predicate<Object> test;

    PythonTest(String name, java.util.function.Predicate<Object> test) {
      this.name = name;
      this.test = test;
    }

    @Override
    public String getName() {
      return name;
    }

    @Override
    public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
      return test.test(var);
    }
  }

  /** transformers' {@code {% generation %}} block (marks assistant text for training masks): renders its body. */
  static final class GenerationTag implements Tag {
    private static final long serialVersionUID = 1L;

    @Override
    public String getName() {
      return "generation";
    }

    @Override
    public String getEndTagName() {
      return "endgeneration";
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
      StringBuilder out = new StringBuilder();
      for (Node child : tagNode.getChildren()) {
        out.append(child.render(interpreter).getValue());
      }
      return out.toString();
    }
  }
}
