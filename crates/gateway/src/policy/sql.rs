//! The SQL matcher: the class of what a SQL text does, decided by parsing
//! it (sqlparser), never by searching for words, so that comments,
//! quoting, case and spacing change nothing: `/* hi */ SeLeCt 1; -- x
//! \n DrOp /* y */ TABLE t` is a `DROP TABLE`.
//!
//! Classes, least to most dangerous: `read` (queries, `SHOW`, `EXPLAIN`,
//! transaction control), `write` (`INSERT`, `UPDATE`, `DELETE`, `MERGE`,
//! `SELECT ... INTO`), `ddl` (`CREATE`/`ALTER`/`DROP` of tables, views,
//! indexes, schemas, types, `TRUNCATE`, `GRANT`, `REVOKE`, `COMMENT`,
//! renames) and `admin`: everything else, which can reach the server's
//! files, programs or roles (`COPY`, `ATTACH`, `PRAGMA`, `SET`, `CALL`,
//! functions, triggers, extensions, roles), and calls of functions that
//! read files or run commands (`pg_read_file`, `lo_import`, `load_extension`,
//! `xp_cmdshell`...), and `write` for calls of functions that change the
//! database (`nextval`, `setval`, `lo_unlink`...), in an expression or as
//! a table (`FROM pg_read_file(...)`). A text's class is that of its most
//! dangerous statement, nested ones included (a `DELETE` inside a `WITH`,
//! the statement an `EXPLAIN` names). A text that does not parse, that the
//! parser does not read to its end, or that it would read otherwise than
//! the server (`misread`: MySQL's `/*! */`...) gets the class the policy
//! says, `admin` by default; MySQL's text is read with and without
//! backslash escapes, the worse reading counting.

use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{
    Expr, ObjectName, Select, SetExpr, Statement, TableFactor, Visit, Visitor, visit_relations,
};
use sqlparser::dialect::{Dialect, MySqlDialect, SnowflakeDialect};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

/// What a SQL text does, ordered from least to most dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqlClass {
    Read,
    Write,
    Ddl,
    Admin,
}

impl SqlClass {
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Ddl => "ddl",
            Self::Admin => "admin",
        }
    }
}

/// The class of a SQL text and the statement that gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub class: SqlClass,
    pub detail: String,
}

/// Functions that read or write the server's files, run programs or stop
/// other sessions, whatever statement calls them.
const ADMIN_FUNCTIONS: &[&str] = &[
    "pg_read_file",
    "pg_read_binary_file",
    "pg_ls_dir",
    "pg_stat_file",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "lo_import",
    "lo_export",
    "dblink",
    "dblink_exec",
    "load_file",
    "load_extension",
    "sys_exec",
    "sys_eval",
    "xp_cmdshell",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
];

/// Functions that change the database although a query calls them: a
/// sequence advanced or set, a large object made or removed, a
/// notification sent (found by the `sql` fuzz target: `SELECT
/// nextval('s')` was `read`).
const WRITE_FUNCTIONS: &[&str] = &[
    "nextval",
    "setval",
    "lo_create",
    "lo_creat",
    "lo_unlink",
    "lo_put",
    "lo_from_bytea",
    "pg_notify",
];

/// Functions that change the server's settings, as `SET` does.
const SETTING_FUNCTIONS: &[&str] = &["set_config"];

/// Classifies `text` as parsed in `dialect`.
pub fn classify(dialect: &dyn Dialect, text: &str, unparseable: SqlClass) -> Classified {
    // The parser bounds the nesting it recurses into, but a chain of
    // operators (`1 + 1 + ...`, `a AND b AND ...`) it reads in a loop into
    // a tree as deep as the chain is long, and dropping or printing that
    // tree recurses once per link: 100,000 links overflowed a 2 MiB stack
    // and aborted the process. A tree is at most as deep as its text is
    // long (twice that once MySQL's backslashes are doubled), so the work
    // runs on a stack of that many frames, grown only for long texts.
    let deepest = text.len().saturating_mul(2);
    let needed = deepest
        .saturating_mul(STACK_PER_LEVEL)
        .saturating_add(STACK_BASE);
    stacker::maybe_grow(needed, needed, || {
        classify_on_this_stack(dialect, text, unparseable)
    })
}

/// The stack given for each level the tree may have (a level per byte of
/// text, twice the text's length): four times what the chains of the
/// `hostile_depth` test need in a debug build (24 was enough, 8 was not).
const STACK_PER_LEVEL: usize = 96;
/// The stack the parser itself may take, its nesting bounded.
const STACK_BASE: usize = 1 << 20;

fn classify_on_this_stack(dialect: &dyn Dialect, text: &str, unparseable: SqlClass) -> Classified {
    if let Some(hazard) = misread(dialect, text) {
        return Classified {
            class: unparseable,
            detail: format!(
                "the SQL holds {hazard}, so it counts as `{}`",
                unparseable.name()
            ),
        };
    }
    if !dialect.is::<MySqlDialect>() {
        return classify_parsed(dialect, text, unparseable);
    }
    let escaped = classify_parsed(dialect, text, unparseable);
    if !text.contains('\\') {
        return escaped;
    }
    // MySQL reads a backslash in a string as an escape but in its
    // `NO_BACKSLASH_ESCAPES` mode (and a `"..."` as a name, without
    // escapes, in `ANSI_QUOTES`): `SELECT 'a\'; DROP TABLE t; -- '` is one
    // query or two. Each backslash doubled gives the parser the other
    // reading, and the worse class counts.
    let plain = classify_parsed(dialect, &text.replace('\\', "\\\\"), unparseable);
    if plain.class > escaped.class {
        Classified {
            class: plain.class,
            detail: format!(
                "read without backslash escapes (MySQL's NO_BACKSLASH_ESCAPES mode), {}",
                plain.detail
            ),
        }
    } else {
        escaped
    }
}

/// What in `text` the parser would not read as the server does: in
/// MySQL, a `/*! */` comment, whose text MySQL runs and the parser skips
/// (found by the `sql` fuzz target: `SELECT 1 /*! ; DROP TABLE t */` was
/// `read`), and a `--` before white space other than ASCII's, which the
/// parser takes for a comment and MySQL for two minus signs (`SELECT 1
/// --\u{a0}; DROP TABLE t`); where `@` starts a name (MySQL, T-SQL, the
/// generic dialect; `#` in the last two), a `@`, `@@` or `#` before a
/// character no name holds, which the parser takes into the name whatever
/// it is (found by the `sql` fuzz target: `SELECT @@;DROP` was one
/// `SELECT` of a variable `@@;DROP`, and `SELECT @;TFIL` and `SELECT
/// #;$$UTFI#` alike); in PostgreSQL, a `&>` the parser reads a character
/// too far.
fn misread(dialect: &dyn Dialect, text: &str) -> Option<&'static str> {
    let after = |at: usize, length: usize| text[at + length..].chars().next();
    if dialect.is::<MySqlDialect>() {
        if text.contains("/*!") {
            return Some("a MySQL executable comment (`/*! */`)");
        }
        if text
            .match_indices("--")
            .any(|(at, _)| after(at, 2).is_some_and(|c| c.is_whitespace() && !c.is_ascii()))
        {
            return Some(
                "a `--` before non-ASCII white space, not a comment in MySQL \
                 (write an ASCII space after `--`)",
            );
        }
    }
    // Where `@` or `#` starts a name, the parser takes the character after
    // it (after `@@`) into the name whatever it is, but for those it reads
    // as an operator with it: `@'`, `@>`, `@?`, `#-`, `#>`.
    let swallowed = |(at, symbol): (usize, &str)| {
        let double = symbol == "@" && text[at + 1..].starts_with('@');
        let operators: &[char] = match symbol {
            _ if double => &[],
            "@" => &['\'', '"', '`', '>', '?'],
            _ => &['-', '>'],
        };
        after(at, if double { 2 } else { 1 })
            .is_some_and(|c| c != ' ' && !dialect.is_identifier_part(c) && !operators.contains(&c))
    };
    // sqlparser 0.63 drops the character after PostgreSQL's `&>` (found by
    // the `sql` fuzz target: `SELECT ne&>;DROP` was `ne &> DROP`).
    if dialect.supports_geometric_types()
        && text
            .match_indices("&>")
            .any(|(at, _)| after(at, 2).is_some_and(|c| !c.is_whitespace()))
    {
        return Some("a `&>` before a character the parser drops (write a space after `&>`)");
    }
    for symbol in ['@', '#'] {
        let starts_a_name =
            dialect.is_identifier_start(symbol) && !dialect.supports_geometric_types();
        if starts_a_name && text.match_indices(symbol).any(swallowed) {
            return Some(
                "a `@`, `@@` or `#` before a character that no name holds \
                 (quote such a name)",
            );
        }
    }
    None
}

/// Classifies `text` by its statements as parsed in `dialect`.
fn classify_parsed(dialect: &dyn Dialect, text: &str, unparseable: SqlClass) -> Classified {
    let statements = match parse_all(dialect, text) {
        Ok(statements) => statements,
        Err(error) => {
            return Classified {
                class: unparseable,
                detail: format!(
                    "the SQL does not parse ({error}), so it counts as `{}`",
                    unparseable.name()
                ),
            };
        }
    };
    let mut worst = Worst {
        class: SqlClass::Read,
        what: None,
    };
    for statement in &statements {
        let _ = statement.visit(&mut worst);
    }
    let count = statements.len();
    let what = worst.what.unwrap_or_else(|| "queries only".to_owned());
    let statements = if count == 1 {
        "1 statement".to_owned()
    } else {
        format!("{count} statements")
    };
    Classified {
        class: worst.class,
        detail: format!("the SQL ({statements}) is `{}`: {what}", worst.class.name()),
    }
}

/// Every statement of `text`, or an error if any of it is left unread:
/// sqlparser stops at an `END` where a statement could end and returns
/// what came before, so `SELECT 1 END; DROP TABLE t` would read as one
/// `SELECT` (found while settling the `sql` fuzz target's reference); and
/// it reads a table named `@...` as a Snowflake stage, up to a space or a
/// `;` it takes with it, so in PostgreSQL `SELECT * FROM @s;VACUUM` was
/// one `SELECT` (found by the `sql` fuzz target).
fn parse_all(dialect: &dyn Dialect, text: &str) -> Result<Vec<Statement>, String> {
    let mut parser = Parser::new(dialect)
        .try_with_sql(text)
        .map_err(|error| error.to_string())?;
    let statements = parser
        .parse_statements()
        .map_err(|error| error.to_string())?;
    if !dialect.is_identifier_start('@') && !dialect.is::<SnowflakeDialect>() {
        let stage = visit_relations(&statements, |name| {
            let name = name.to_string();
            if name.starts_with('@') {
                ControlFlow::Break(name)
            } else {
                ControlFlow::Continue(())
            }
        });
        if let ControlFlow::Break(name) = stage {
            return Err(format!(
                "`{name}` is read as a Snowflake stage, which this dialect has not"
            ));
        }
    }
    let rest = parser.peek_token();
    if rest.token == Token::EOF {
        Ok(statements)
    } else {
        Err(format!(
            "nothing may follow the statements, found: {} at {}",
            rest.token, rest.span.start
        ))
    }
}

/// Keeps the most dangerous class seen while visiting.
struct Worst {
    class: SqlClass,
    what: Option<String>,
}

impl Worst {
    fn saw(&mut self, class: SqlClass, what: impl FnOnce() -> String) {
        if class > self.class
            || (class == self.class && self.what.is_none() && class > SqlClass::Read)
        {
            self.class = class;
            self.what = Some(what());
        }
    }
}

impl Visitor for Worst {
    type Break = ();

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
        let class = statement_class(statement);
        self.saw(class, || leading_words(statement));
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        if select.into.is_some() {
            self.saw(SqlClass::Write, || "SELECT ... INTO".to_owned());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &sqlparser::ast::Query) -> ControlFlow<()> {
        if let SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) =
            query.body.as_ref()
        {
            self.saw(SqlClass::Write, || "a data-modifying subquery".to_owned());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(function) = expr {
            self.saw_a_call(&function.name);
        }
        ControlFlow::Continue(())
    }

    /// A function called where a table stands, `FROM pg_read_file('...')`
    /// (found by the `sql` fuzz target: `FROM nextval('s')` was `read`).
    fn pre_visit_table_factor(&mut self, table: &TableFactor) -> ControlFlow<()> {
        match table {
            TableFactor::Table {
                name,
                args: Some(_),
                ..
            }
            | TableFactor::Function { name, .. } => self.saw_a_call(name),
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

impl Worst {
    /// The class a call of the function `name` gives.
    fn saw_a_call(&mut self, name: &ObjectName) {
        let name = name
            .0
            .last()
            .map(|part| part.to_string().trim_matches('"').to_ascii_lowercase())
            .unwrap_or_default();
        if ADMIN_FUNCTIONS.contains(&name.as_str()) || SETTING_FUNCTIONS.contains(&name.as_str()) {
            self.saw(SqlClass::Admin, || format!("a call of `{name}`"));
        } else if WRITE_FUNCTIONS.contains(&name.as_str()) {
            self.saw(SqlClass::Write, || format!("a call of `{name}`"));
        }
    }
}

/// The first words of a statement as sqlparser prints it back (comments
/// gone, keywords upper-case): `DROP TABLE`, `INSERT INTO`.
fn leading_words(statement: &Statement) -> String {
    let text = statement.to_string();
    let words: Vec<&str> = text
        .split_whitespace()
        .take_while(|word| word.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .take(3)
        .collect();
    if words.is_empty() {
        "a statement".to_owned()
    } else {
        format!("`{}`", words.join(" "))
    }
}

fn statement_class(statement: &Statement) -> SqlClass {
    use Statement as S;
    match statement {
        S::Query(_)
        | S::Explain { .. }
        | S::ExplainTable { .. }
        | S::StartTransaction { .. }
        | S::Commit { .. }
        | S::Rollback { .. }
        | S::Savepoint { .. }
        | S::ReleaseSavepoint { .. }
        | S::Use(_)
        | S::ShowFunctions { .. }
        | S::ShowVariable { .. }
        | S::ShowStatus { .. }
        | S::ShowVariables { .. }
        | S::ShowCreate { .. }
        | S::ShowColumns { .. }
        | S::ShowCatalogs { .. }
        | S::ShowDatabases { .. }
        | S::ShowSchemas { .. }
        | S::ShowCharset(_)
        | S::ShowObjects(_)
        | S::ShowTables { .. }
        | S::ShowViews { .. }
        | S::ShowCollation { .. } => SqlClass::Read,
        S::Insert(_) | S::Update(_) | S::Delete(_) | S::Merge(_) => SqlClass::Write,
        S::CreateView(_)
        | S::CreateTable(_)
        | S::CreateVirtualTable { .. }
        | S::CreateIndex(_)
        | S::CreateSchema { .. }
        | S::CreateDatabase { .. }
        | S::CreateSequence { .. }
        | S::CreateType { .. }
        | S::CreateDomain(_)
        | S::AlterTable(_)
        | S::AlterIndex { .. }
        | S::AlterView { .. }
        | S::AlterSchema(_)
        | S::AlterType(_)
        | S::Drop { .. }
        | S::DropDomain(_)
        | S::Truncate(_)
        | S::RenameTable(_)
        | S::Comment { .. }
        | S::Grant(_)
        | S::Revoke(_)
        | S::Deny(_) => SqlClass::Ddl,
        _ => SqlClass::Admin,
    }
}

/// A sqlparser dialect by the name a policy gives it (`generic`,
/// `postgresql`, `mysql`, `sqlite`, `mssql`, `snowflake`, `bigquery`...).
pub fn dialect(name: &str) -> Option<Box<dyn Dialect>> {
    sqlparser::dialect::dialect_from_str(name)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    fn class(text: &str) -> SqlClass {
        classify(dialect("generic").unwrap().as_ref(), text, SqlClass::Admin).class
    }

    /// Deeply nested or very long SQL from a peer, on a thread with a
    /// tokio worker's 2 MiB stack: each text is classified (read when it
    /// parses, the fallback when it is refused for its depth) and nothing
    /// overflows the stack, in parsing, visiting or dropping the tree.
    #[test]
    fn hostile_depth_neither_overflows_nor_is_read_wrongly() {
        fn nested(depth: usize, open: &str, middle: &str, close: &str) -> String {
            format!(
                "SELECT {}{middle}{}",
                open.repeat(depth),
                close.repeat(depth)
            )
        }
        let cases = |depth: usize| {
            vec![
                nested(depth, "(", "1", ")"),
                nested(depth, "NOT ", "1", ""),
                nested(depth, "- ", "1", ""),
                nested(depth, "f(", "1", ")"),
                nested(depth, "[", "1", "]"),
                nested(depth, "CASE WHEN ", "1", " THEN 1 END"),
                format!(
                    "SELECT * FROM {}t{}",
                    "(SELECT * FROM ".repeat(depth),
                    ")".repeat(depth)
                ),
            ]
        };
        let chains = |links: usize| {
            vec![
                format!("SELECT 1{}", "+1".repeat(links)),
                format!("SELECT 1 WHERE a = 1{}", " AND a = 1".repeat(links)),
                format!("SELECT 'a'{}", "||'a'".repeat(links)),
            ]
        };
        let worker = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let long = [1_000, 300_000].into_iter().flat_map(chains);
                let deep = [20, 100, 10_000].into_iter().flat_map(cases);
                for text in long.chain(deep) {
                    let classified = class(&text);
                    assert!(
                        matches!(classified, SqlClass::Read | SqlClass::Admin),
                        "{}... ({} bytes): {classified:?}",
                        &text[..40.min(text.len())],
                        text.len()
                    );
                }
            })
            .unwrap();
        worker.join().unwrap();
    }

    #[test]
    fn an_into_after_the_from_is_not_read() {
        for (dialect_name, text) in [
            ("mysql", "SELECT * FROM t INTO OUTFILE '/tmp/x'"),
            ("mysql", "SELECT * FROM t INTO DUMPFILE '/tmp/x'"),
            ("mssql", "SELECT * INTO #copy FROM t"),
            ("postgresql", "SELECT * INTO copy FROM t"),
        ] {
            let dialect = dialect(dialect_name).unwrap();
            let classified = classify(dialect.as_ref(), text, SqlClass::Admin);
            assert_ne!(classified.class, SqlClass::Read, "{dialect_name}: {text}");
        }
    }

    #[test]
    fn issue_22_a_mysql_executable_comment_is_not_read() {
        let mysql = dialect("mysql").unwrap();
        let classified = classify(
            mysql.as_ref(),
            "SELECT 1 /*! ; DROP TABLE t */",
            SqlClass::Admin,
        );
        assert_eq!(classified.class, SqlClass::Admin, "{}", classified.detail);
        assert_eq!(
            classify(
                mysql.as_ref(),
                "SELECT 1 /* ; DROP TABLE t */",
                SqlClass::Admin
            )
            .class,
            SqlClass::Read
        );
    }

    /// MySQL's modes without backslash escapes read `'a\'` as a whole
    /// string; MySQL reads `--` as a comment only before ASCII's white space.
    #[test]
    fn issue_22_a_mysql_text_read_another_way_is_not_read() {
        let mysql = dialect("mysql").unwrap();
        let class = |text: &str| classify(mysql.as_ref(), text, SqlClass::Admin);
        for text in [
            "SELECT 'a\\'; DROP TABLE t; -- '",
            "SELECT \"a\\\"; DROP TABLE t; -- \"",
            "SELECT 1 --\u{a0}; DROP TABLE t",
            "SELECT @@;DROP/**/TABLE/**/t",
            "SELECT @;DROP/**/TABLE/**/t",
            "SELECT @@'; DROP TABLE t; -- '",
        ] {
            assert_ne!(class(text).class, SqlClass::Read, "{text}");
        }
        let escaped = class("SELECT 'a\\'; DROP TABLE t; -- '");
        assert!(
            escaped.detail.contains("NO_BACKSLASH_ESCAPES"),
            "{}",
            escaped.detail
        );
        assert_eq!(class("SELECT 'a\\\\b' FROM t -- x").class, SqlClass::Read);
        // `'it\'s'` does not parse without escapes, and a MySQL server
        // running statements one by one may have run some before the
        // error: `''` is the quote both readings share.
        assert_eq!(class("SELECT 'it\\'s' FROM t").class, SqlClass::Admin);
        assert_eq!(class("SELECT 'it''s' FROM t").class, SqlClass::Read);
        assert_eq!(
            class("SELECT @@version, @@session.sql_mode, @@@x, @a").class,
            SqlClass::Read
        );
    }

    #[test]
    fn issue_22_a_character_the_parser_drops_is_not_read() {
        let postgresql = dialect("postgresql").unwrap();
        let class = |text: &str| classify(postgresql.as_ref(), text, SqlClass::Admin).class;
        assert_eq!(class("SELECT ne&>;DROP"), SqlClass::Admin);
        assert_eq!(class("SELECT a &> b FROM t"), SqlClass::Read);
    }

    #[test]
    fn issue_22_a_snowflake_stage_elsewhere_is_not_read() {
        for name in ["postgresql", "sqlite"] {
            let dialect = dialect(name).unwrap();
            let classified = classify(dialect.as_ref(), "SELECT * FROM @s;VACUUM", SqlClass::Admin);
            assert_eq!(
                classified.class,
                SqlClass::Admin,
                "{name}: {}",
                classified.detail
            );
            assert!(classified.detail.contains("stage"), "{}", classified.detail);
        }
        let snowflake = dialect("snowflake").unwrap();
        let staged = classify(snowflake.as_ref(), "SELECT * FROM @s", SqlClass::Admin);
        assert_eq!(staged.class, SqlClass::Read, "{}", staged.detail);
    }

    #[test]
    fn issue_22_a_query_calling_a_function_that_writes_is_not_read() {
        assert_eq!(class("SELECT nextval('orders_id_seq')"), SqlClass::Write);
        assert_eq!(
            class("select 1 from t where setval('s', 1) > 0"),
            SqlClass::Write
        );
        assert_eq!(class("SELECT lo_unlink(16401)"), SqlClass::Write);
        assert_eq!(
            class("SELECT set_config('search_path', 'evil', false)"),
            SqlClass::Admin
        );
        assert_eq!(class("SELECT currval('s'), lastval()"), SqlClass::Read);
        assert_eq!(class("SELECT * FROM t, nextval('s')"), SqlClass::Write);
        assert_eq!(
            class("SELECT * FROM pg_read_file('/etc/passwd')"),
            SqlClass::Admin
        );
        assert_eq!(class("SELECT * FROM generate_series(1, 3)"), SqlClass::Read);
    }

    #[test]
    fn statements_are_classified_by_parsing() {
        let table = [
            ("SELECT * FROM users WHERE id = 1", SqlClass::Read),
            ("select 'DROP TABLE users' as x", SqlClass::Read),
            ("-- DROP TABLE users\nSELECT 1", SqlClass::Read),
            ("BEGIN; SELECT 1; COMMIT", SqlClass::Read),
            ("EXPLAIN SELECT 1", SqlClass::Read),
            ("INSERT INTO t VALUES (1)", SqlClass::Write),
            ("UPDATE t SET a = 1", SqlClass::Write),
            ("SELECT * INTO copy FROM t", SqlClass::Write),
            (
                "WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone",
                SqlClass::Write,
            ),
            (
                "/* report */ SeLeCt 1; -- harmless\n DrOp /* sneaky */ TaBlE users",
                SqlClass::Ddl,
            ),
            ("TRUNCATE TABLE t", SqlClass::Ddl),
            ("GRANT ALL ON t TO bob", SqlClass::Ddl),
            ("SELECT pg_read_file('/etc/passwd')", SqlClass::Admin),
            ("COPY t FROM '/etc/passwd'", SqlClass::Admin),
            ("SET search_path = evil", SqlClass::Admin),
            ("DROP TABLE users; SELEC oops", SqlClass::Admin),
            ("SELECT 1 END; DROP TABLE t", SqlClass::Admin),
            ("SELECT 1 END DROP TABLE t", SqlClass::Admin),
            ("SELECT 1 #;DROP", SqlClass::Admin),
            ("SELECT #x, @y FROM #t", SqlClass::Read),
        ];
        for (text, expected) in table {
            assert_eq!(class(text), expected, "{text}");
        }
    }

    #[test]
    fn the_detail_names_the_dangerous_statement() {
        let classified = classify(
            dialect("generic").unwrap().as_ref(),
            "SELECT 1; /* x */ drop table users",
            SqlClass::Admin,
        );
        assert!(
            classified.detail.contains("`DROP TABLE"),
            "{}",
            classified.detail
        );
        assert!(
            classified.detail.contains("2 statements"),
            "{}",
            classified.detail
        );
    }
}
