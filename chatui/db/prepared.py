"""Hot queries compiled once, then run with new values (docs/PERFORMANCE.md#p2).

Django builds and compiles a QuerySet's SQL every time one runs: filter
resolution, joins, the SELECT list, converters — 0.2–0.5 ms of Python for a
one-row indexed read that SQLite answers in 0.02 ms (bench/README.md:
`profile_ingest.py`). The ingest path runs the same few query shapes for every
event with only the values changed, so `Prepared` compiles each shape once per
database connection and keeps its SQL, its parameter slots and how to turn rows
into objects.

A shape is written as an ordinary QuerySet built from named values, with the
model field each value is compared against (that field converts it for the
database, as the ORM would):

    LOCK = Prepared(
        lambda pk: Conversation.objects.select_for_update().filter(pk=pk),
        pk=Conversation._meta.pk,
    )
    locked = LOCK.one(pk=conversation.pk)

The QuerySet is built once with a sample value per name, unique enough to be
found in the compiled parameters; every value must appear as a parameter of its
own (a scalar comparison, not an `__in` list whose length varies). Rows come back
as the QuerySet would give them: model instances (with `select_related` objects
and annotations), or tuples / single values for `values_list`.

An `__in` list is prepared per size (`InSizes`): padded to the next of a few
sizes by repeating a value, so a batch's lookups of 2…500 values run five shapes,
each compiled once. `PreparedLookup` looks rows up by one value or such a list;
`PreparedUpdate` does the same for an UPDATE, `PreparedDelete` for a DELETE,
`PreparedSave` for `save(update_fields=…)` of one row, `PreparedInsert` for
`bulk_create` of rows whose primary keys are not read back.

Why it is long: every kind of statement the hot path runs (read, lookup, update,
delete, save, insert) is here with what they share: one cursor kept per connection,
values converted by a function chosen once per field and database, rows made into
objects without the ORM's per-query work. Split, each part would import the others.
"""

from __future__ import annotations

import itertools
import operator
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from django.db import connections, models
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models.query import (
    FlatValuesListIterable,
    ModelIterable,
    ValuesListIterable,
    get_related_populators,
)
from django.db.models.sql import DeleteQuery, UpdateQuery
from django.utils.connection import ConnectionProxy

T = TypeVar("T")
S = TypeVar("S")
V = TypeVar("V")


def _made_once(cache: dict[Any, V], key: Any, make: Callable[[], V]) -> V:
    """What `make()` gives, made the first time `key` (a database alias, with whatever
    else shapes the statement) is asked for, and kept: statements are built from the
    models' fields and the database's quoting, neither of which changes. Two threads
    may both make it the first time; either result is the same."""
    made = cache.get(key)
    if made is None:
        made = cache[key] = make()
    return made


def cursor_for(connection) -> Any:
    """A cursor of `connection` kept for its statements while the same database
    connection lasts: `connection.cursor()` per statement (its checks, a new DB-API
    cursor and Django's wrapper, then closing it) cost about as much as a prepared
    statement's own Python (docs/PERFORMANCE.md#p2). Made again when the connection changes, when
    query logging is switched (tests count statements) or while a health check is
    due; the checks `cursor()` makes are made then. Not kept for a connection threads
    share (a live test server's): one thread's rows could be another's. Rows must be
    fetched to the end (a statement left running would hold SQLite's read lock)."""
    if isinstance(connection, ConnectionProxy):  # `django.db.connection`: one per thread
        connection = connections[connection._alias]
    if connection.allow_thread_sharing:
        return connection.cursor()
    kept = connection.__dict__.get("_chatui_cursor")
    logged = connection.queries_logged
    if (
        kept is not None
        and kept[0] is connection.connection
        and kept[1] == logged
        and (connection.health_check_done or not connection.health_check_enabled)
    ):
        return kept[2]
    cursor = connection.cursor()
    connection.__dict__["_chatui_cursor"] = (connection.connection, logged, cursor)
    return cursor


_samples = itertools.count(1)
_UNSEEN = object()


def _sample(field: models.Field, connection) -> Any:
    """A value of `field`'s type that no real query passes."""
    n = next(_samples)
    if isinstance(field, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field, models.IntegerField):
        # Near the top of its range: Django refuses to compile a comparison with a value
        # outside it (EmptyResultSet), and no real id, seq or position comes near.
        _low, high = connection.ops.integer_field_range(field.get_internal_type())
        return (high or 2**62) - n
    if isinstance(field, models.CharField | models.TextField):
        return f"\x01chatui-prepared-{n}-{uuid.uuid4().hex}\x01"
    if isinstance(field, models.DateTimeField):
        # A moment no event carries: in the year 9000, n microseconds apart.
        return datetime(9000, 1, 1, tzinfo=UTC) + timedelta(microseconds=n)
    raise TypeError(f"no sample value for a {type(field).__name__}")


Convert = Callable[[Any, Any], Any]  # (value, connection) -> the value for the database


def _converter(field: models.Field, connection) -> Convert:
    """`field.get_db_prep_save(value, connection)`, with the values the ORM would pass
    on unchanged passed on without its layers (Promise checks, `to_python`, the
    backend's hooks): a str for a text column, a bool for a boolean, an int where the
    backend adapts none, a UUID as the backend stores it, an aware datetime straight
    to the backend's adapter. Anything else takes the field's own way. Only Django's
    own field classes: a subclass may convert differently."""
    save = field.get_db_prep_save
    kind = type(field)
    if isinstance(field, models.ForeignKey):
        # What the key's target field does, but None and "" have rules of their own.
        target = _converter(field.target_field, connection)
        return lambda value, db: (
            save(value, db) if value is None or value == "" else target(value, db)
        )
    passed = _passed_type(field, connection)
    if passed is not None:
        return lambda value, db: value if type(value) is passed else save(value, db)
    if kind is models.UUIDField:
        if connection.features.has_native_uuid_field:
            return lambda value, db: value if type(value) is uuid.UUID else save(value, db)
        return lambda value, db: value.hex if type(value) is uuid.UUID else save(value, db)
    if kind is models.DateTimeField:
        # An aware datetime is one `get_prep_value` leaves as it is, whatever USE_TZ.

        def datetime_value(value: Any, db) -> Any:
            if type(value) is datetime and value.utcoffset() is not None:
                return db.ops.adapt_datetimefield_value(value)
            return save(value, db)

        return datetime_value
    return save


_PASSED_ON: dict[type[models.Field], type] = {
    models.CharField: str,
    models.TextField: str,
    models.BooleanField: bool,
    models.IntegerField: int,
    models.BigIntegerField: int,
    models.PositiveIntegerField: int,
    models.PositiveBigIntegerField: int,
    models.AutoField: int,
    models.BigAutoField: int,
}


def _passed_type(field: models.Field, connection) -> type | None:
    """The type of value `field` sends to the database as it is, if any."""
    kind = type(field)
    passed = _PASSED_ON.get(kind)
    if passed is int and not _passes_integers(kind, connection):
        return None
    return passed


def _passes_integers(kind: type[models.Field], connection) -> bool:
    """Whether the backend passes a column's integers on as they are (SQLite; not
    psycopg 3's PostgreSQL, which wraps them in typed integers)."""
    ops = type(connection.ops)
    if issubclass(kind, models.AutoField | models.BigAutoField):
        return ops.validate_autopk_value is BaseDatabaseOperations.validate_autopk_value
    return ops.adapt_integerfield_value is BaseDatabaseOperations.adapt_integerfield_value


@dataclass(frozen=True)
class _RowPlan:
    """How to read and convert some fields' values of objects being written, per
    database: the columns read in one `attrgetter` call; those whose `pre_save`
    computes them (`auto_now`) recomputed; those mostly passed on as they are checked
    by type inline (no call); the others converted, once for a run of the very same
    object (a batch's rows share their conversation and, mostly, their times)."""

    read: Callable[[Any], Any]
    computed: tuple[tuple[int, models.Field], ...]
    as_they_are: tuple[tuple[int, type, Convert], ...]
    converted: tuple[tuple[int, Convert], ...]
    width: int

    @classmethod
    def of(cls, fields: list[models.Field], connection) -> _RowPlan:
        as_they_are, converted = [], []
        for n, field in enumerate(fields):
            passed = _passed_type(field, connection)
            if passed is not None:
                as_they_are.append((n, passed, _converter(field, connection)))
            else:
                converted.append((n, _converter(field, connection)))
        return cls(
            read=operator.attrgetter(*(field.attname for field in fields)),
            computed=tuple((n, f) for n, f in enumerate(fields) if not _reads_as_is(f)),
            as_they_are=tuple(as_they_are),
            converted=tuple(converted),
            width=len(fields),
        )

    def rows(self, objs: Iterable[models.Model], connection, *, add: bool) -> list[list[Any]]:
        """Each object's values as `field.get_db_prep_save(field.pre_save(obj, add))`."""
        seen: list[Any] = [_UNSEEN] * self.width
        made: list[Any] = [None] * self.width
        rows = []
        for obj in objs:
            row = list(self.read(obj)) if self.width > 1 else [self.read(obj)]
            for n, field in self.computed:
                row[n] = field.pre_save(obj, add)
            for n, passed, convert in self.as_they_are:
                value = row[n]
                if type(value) is not passed:
                    row[n] = convert(value, connection)
            for n, convert in self.converted:
                value = row[n]
                if value is not seen[n]:
                    seen[n], made[n] = value, convert(value, connection)
                row[n] = made[n]
            rows.append(row)
        return rows


def _reads_as_is(field: models.Field) -> bool:
    """Whether `field.pre_save(obj, add)` is just its attribute's value."""
    pre_save = type(field).pre_save
    if pre_save is models.Field.pre_save:
        return True
    return (
        pre_save in (models.DateField.pre_save, models.DateTimeField.pre_save)
        and not field.auto_now
        and not field.auto_now_add
    )


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, str, Convert], ...]  # parameter index, value name, conversion
    converters: dict[int, tuple[list[Callable], Any]]
    width: int  # the columns the ORM reads of each row
    shape: str  # "models", "tuples" or "flat"
    model: type[models.Model] | None = None
    init_list: tuple[str, ...] = ()
    model_span: tuple[int, int] = (0, 0)
    related: tuple[Any, ...] = ()
    annotations: tuple[tuple[str, int], ...] = ()


class Prepared(Generic[T]):
    """One query shape: compiled on first use per database, then only executed."""

    def __init__(self, build: Callable[..., Any], **fields: models.Field):
        self.build = build
        self.fields = fields
        self._compiled: dict[str, _Compiled] = {}

    # -- running ----------------------------------------------------------------

    def all(self, using: str = "default", **values: Any) -> list[T]:
        compiled = self._compile(using)
        connection = connections[using]
        cursor = cursor_for(connection)
        cursor.execute(compiled.sql, _filled(compiled.params, compiled.slots, values, connection))
        rows = cursor.fetchall()
        return [self._result(compiled, row, using) for row in rows]

    def one(self, using: str = "default", **values: Any) -> T | None:
        """The first row, or None (the shape should select one row: a key, or LIMIT 1)."""
        found = self.all(using, **values)
        return found[0] if found else None

    def _result(self, compiled: _Compiled, row: tuple, using: str) -> Any:
        row = _converted(compiled, row[: compiled.width], connections[using])
        if compiled.shape == "flat":
            return row[0]
        if compiled.shape == "tuples":
            return tuple(row)
        start, end = compiled.model_span
        obj = compiled.model.from_db(using, compiled.init_list, row[start:end])
        for populator in compiled.related:
            populator.populate(row, obj)
        for name, position in compiled.annotations:
            setattr(obj, name, row[position])
        return obj

    # -- compiling --------------------------------------------------------------

    def _compile(self, using: str) -> _Compiled:
        # By the connection's own alias: replay's scratch databases stand in for
        # "default" (SQLite ones, also beside PostgreSQL: chatui.read.replay).
        key = connections[using].alias
        return _made_once(self._compiled, key, lambda: self._compile_now(using))

    def _compile_now(self, using: str) -> _Compiled:
        connection = connections[using]
        samples = {name: _sample(field, connection) for name, field in self.fields.items()}
        queryset = self.build(**samples)
        compiler = queryset.query.get_compiler(connection=connection)
        sql, params = compiler.as_sql()
        slots = _slots(sql, params, self.fields, samples, connection)
        expressions = [column for column, _, _ in compiler.select]
        common = {
            "sql": sql,
            "params": tuple(params),
            "slots": slots,
            "converters": compiler.get_converters(expressions),
            "width": compiler.col_count,
        }
        iterable = queryset._iterable_class
        if iterable is FlatValuesListIterable:
            return _Compiled(**common, shape="flat")
        if iterable is ValuesListIterable:
            return _Compiled(**common, shape="tuples")
        if iterable is not ModelIterable:
            raise TypeError(f"{iterable.__name__} querysets cannot be prepared")
        klass_info = compiler.klass_info
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        return _Compiled(
            **common,
            shape="models",
            model=klass_info["model"],
            init_list=tuple(column.target.attname for column, _, _ in compiler.select[start:end]),
            model_span=(start, end),
            related=tuple(get_related_populators(klass_info, compiler.select, using)),
            annotations=tuple(compiler.annotation_col_map.items()),
        )


def _slots(
    sql: str, params: tuple | list, fields: dict[str, models.Field], samples: dict, connection
) -> tuple[tuple[int, str, Convert], ...]:
    """Where each named value's sample went among the compiled parameters, and how
    its field converts it."""
    slots = tuple(
        (index, name, _converter(field, connection))
        for name, field in fields.items()
        for index, param in enumerate(params)
        if param == field.get_db_prep_value(samples[name], connection)
    )
    missing = set(fields) - {name for _, name, _ in slots}
    if missing:
        raise ValueError(f"values {sorted(missing)} are not single parameters of {sql}")
    return slots


def _filled(params: tuple, slots, values: dict[str, Any], connection) -> list[Any]:
    filled = list(params)
    for index, name, convert in slots:
        filled[index] = convert(values[name], connection)
    return filled


def _converted(compiled: _Compiled, row: tuple, connection) -> list[Any]:
    values = list(row)
    for position, (functions, expression) in compiled.converters.items():
        value = values[position]
        for convert in functions:
            value = convert(value, expression, connection)
        values[position] = value
    return values


class InSizes(Generic[S]):
    """One prepared shape per IN-list size: a list of n values runs the shape of the
    smallest size ≥ n, padded by repeating its last value (IN ignores repeats), in
    chunks of the largest size (under SQLite's parameter limit). `make(names)` builds
    the shape whose IN list holds the values named `names`, in order."""

    SIZES = (8, 32, 128, 500)

    def __init__(self, make: Callable[[tuple[str, ...]], S]):
        self.make = make
        self._shapes: dict[int, S] = {}

    def chunks(self, values: Iterable[Any]) -> Iterator[tuple[S, dict[str, Any]]]:
        """(shape, its named values) for each chunk of `values` (sorted: stable SQL)."""
        ordered = sorted(values)
        largest = self.SIZES[-1]
        for start in range(0, len(ordered), largest):
            chunk = ordered[start : start + largest]
            size = next(size for size in self.SIZES if size >= len(chunk))
            padded = chunk + chunk[-1:] * (size - len(chunk))
            yield self._shape(size), dict(zip(_in_names(size), padded, strict=True))

    def _shape(self, size: int) -> S:
        return _made_once(self._shapes, size, lambda: self.make(_in_names(size)))


def _in_names(size: int) -> tuple[str, ...]:
    return tuple(f"in{n}" for n in range(size))


class PreparedLookup:
    """The rows of one owner (a conversation) whose `field` is among some values: for
    one value — a single-event request's usual case — a `Prepared` equality; for more,
    a prepared `field__in` per list size (`InSizes`). `rows(owner_pk)` is the query
    before the field's filter; `owner` names its model's foreign key to the owner,
    whose primary key field converts `owner_pk`."""

    def __init__(self, rows: Callable[[Any], Any], field: str, owner: str = "conversation"):
        self.rows = rows
        self.field = field
        model = rows(None).model
        owner_key = model._meta.get_field(owner).target_field
        value_field = model._meta.get_field(field)
        self.one: Prepared[Any] = Prepared(
            lambda owner, value: rows(owner).filter(**{field: value}),
            owner=owner_key,
            value=value_field,
        )

        def among(names: tuple[str, ...]) -> Prepared[Any]:
            return Prepared(
                lambda owner, **values: rows(owner).filter(
                    **{f"{field}__in": [values[name] for name in names]}
                ),
                owner=owner_key,
                **dict.fromkeys(names, value_field),
            )

        self.among: InSizes[Prepared[Any]] = InSizes(among)

    def matching(self, owner_pk: Any, values: set[str]) -> list[Any]:
        if not values:
            return []
        if len(values) == 1:
            return self.one.all(owner=owner_pk, value=next(iter(values)))
        return [
            row
            for shape, named in self.among.chunks(values)
            for row in shape.all(owner=owner_pk, **named)
        ]


class _PreparedWrite:
    """A statement compiled once per database from the query `_query(samples)` builds;
    each run binds the values by name."""

    fields: dict[str, models.Field]

    def __init__(self) -> None:
        self._compiled: dict[str, tuple[str, tuple, tuple]] = {}

    def run(self, using: str = "default", **values: Any) -> int:
        """Run it; the number of rows changed."""
        connection = connections[using]
        sql, params, slots = _made_once(
            self._compiled, connection.alias, lambda: self._compile_now(connection)
        )
        cursor = cursor_for(connection)
        cursor.execute(sql, _filled(params, slots, values, connection))
        return cursor.rowcount

    def _compile_now(self, connection) -> tuple[str, tuple, tuple]:
        samples = {name: _sample(field, connection) for name, field in self.fields.items()}
        sql, params = self._query(samples).get_compiler(connection=connection).as_sql()
        return sql, tuple(params), _slots(sql, params, self.fields, samples, connection)

    def _query(self, samples: dict[str, Any]) -> Any:
        raise NotImplementedError


class PreparedUpdate(_PreparedWrite):
    """An UPDATE compiled once: the rows `build(**values)` selects get what
    `changes(**values)` gives — values, or expressions such as `F("content") || text`."""

    def __init__(
        self,
        build: Callable[..., Any],
        changes: Callable[..., dict[str, Any]],
        **fields: models.Field,
    ):
        super().__init__()
        self.build, self.changes, self.fields = build, changes, fields

    def _query(self, samples: dict[str, Any]) -> UpdateQuery:
        query = self.build(**samples).query.chain(UpdateQuery)
        query.add_update_values(self.changes(**samples))
        return query


class PreparedDelete(_PreparedWrite):
    """A DELETE compiled once, of the rows `build(**values)` selects — in SQL only: no
    `on_delete` handling, no signals (the caller deals with what points at them)."""

    def __init__(self, build: Callable[..., Any], **fields: models.Field):
        super().__init__()
        self.build, self.fields = build, fields

    def _query(self, samples: dict[str, Any]) -> DeleteQuery:
        return self.build(**samples).query.chain(DeleteQuery)


class PreparedSave:
    """`obj.save(update_fields=fields)` of a row that exists, as one UPDATE written once:
    each value through its field's `pre_save` (`auto_now`) and `get_db_prep_save`, as
    `save()` does. No model signals: nothing in chatui listens to these models' saves."""

    def __init__(self, model: type[models.Model], fields: list[str]):
        self.model = model
        self.fields = [model._meta.get_field(name) for name in fields]
        self._sql: dict[str, str] = {}
        self._plans: dict[str, _RowPlan] = {}  # by database: the fields, then the pk

    def run(self, obj: models.Model, using: str = "default") -> int:
        """Save; the number of rows changed (0: the row is gone)."""
        connection = connections[using]
        cursor = cursor_for(connection)
        cursor.execute(self._sql_for(connection), self._params(obj, connection))
        return cursor.rowcount

    def run_many(self, objs: list[models.Model], using: str = "default") -> None:
        """Save each of `objs`: the same UPDATE run for each row in one `executemany`
        (`bulk_update`'s CASE WHEN per column and row costs more to build than to run)."""
        connection = connections[using]
        rows = self._plan(connection).rows(objs, connection, add=False)
        cursor = cursor_for(connection)
        cursor.executemany(self._sql_for(connection), rows)

    def _sql_for(self, connection) -> str:
        return _made_once(self._sql, connection.alias, lambda: self._write_sql(connection))

    def _params(self, obj: models.Model, connection) -> list[Any]:
        return self._plan(connection).rows([obj], connection, add=False)[0]

    def _plan(self, connection) -> _RowPlan:
        fields = [*self.fields, self.model._meta.pk]
        return _made_once(self._plans, connection.alias, lambda: _RowPlan.of(fields, connection))

    def _write_sql(self, connection) -> str:
        quote = connection.ops.quote_name
        assignments = ", ".join(f"{quote(field.column)} = %s" for field in self.fields)
        table, pk = quote(self.model._meta.db_table), quote(self.model._meta.pk.column)
        return f"UPDATE {table} SET {assignments} WHERE {pk} = %s"


class PreparedInsert:
    """`bulk_create` as one INSERT written once: each value converted by its field, as
    the ORM does. `run` for rows nobody reads the primary key of (the event log's),
    `run_returning` for rows whose primary keys are read back (new messages)."""

    def __init__(self, model: type[models.Model]):
        self.model = model
        self.fields = [
            field
            for field in model._meta.concrete_fields
            if not (field.primary_key and isinstance(field, models.AutoField | models.BigAutoField))
        ]
        self._sql: dict[Any, str] = {}  # by database, and rows for `run_returning`'s
        self._plans: dict[str, _RowPlan] = {}  # by database

    def run(self, objs: list[models.Model], using: str = "default") -> None:
        if not objs:
            return
        connection = connections[using]
        sql = _made_once(self._sql, connection.alias, lambda: self._write_sql(connection))
        rows = self._rows(objs, connection)
        cursor = cursor_for(connection)
        if len(rows) == 1:
            cursor.execute(sql, rows[0])
        else:
            cursor.executemany(sql, rows)
        for obj in objs:
            obj._state.adding, obj._state.db = False, using

    def run_returning(self, objs: list[models.Model], using: str = "default") -> None:
        """Insert `objs` and set their primary keys, as `bulk_create` does: one
        multi-row `INSERT … RETURNING` per chunk the database's parameter limit allows
        (rows come back in the order given, as `bulk_create` relies on too)."""
        connection = connections[using]
        if not connection.features.can_return_rows_from_bulk_insert:
            self.model._base_manager.using(using).bulk_create(objs)
            return
        pk = self.model._meta.pk
        per_statement = max(1, connection.ops.bulk_batch_size(self.fields, objs))
        for start in range(0, len(objs), per_statement):
            chunk = objs[start : start + per_statement]
            params = [value for row in self._rows(chunk, connection) for value in row]
            cursor = cursor_for(connection)
            cursor.execute(self._returning_sql_for(connection, len(chunk)), params)
            keys = cursor.fetchall()
            for obj, (key,) in zip(chunk, keys, strict=True):
                setattr(obj, pk.attname, key)
                obj._state.adding, obj._state.db = False, using

    def _rows(self, objs: list[models.Model], connection) -> list[list[Any]]:
        """Each object's values, converted by their fields (`_RowPlan`)."""
        plan = _made_once(
            self._plans, connection.alias, lambda: _RowPlan.of(self.fields, connection)
        )
        return plan.rows(objs, connection, add=True)

    def _write_sql(self, connection) -> str:
        return f"{self._into(connection)} VALUES ({', '.join(['%s'] * len(self.fields))})"

    def _returning_sql_for(self, connection, rows: int) -> str:
        return _made_once(
            self._sql, (connection.alias, rows), lambda: self._returning_sql(connection, rows)
        )

    def _returning_sql(self, connection, rows: int) -> str:
        row = f"({', '.join(['%s'] * len(self.fields))})"
        pk = connection.ops.quote_name(self.model._meta.pk.column)
        return f"{self._into(connection)} VALUES {', '.join([row] * rows)} RETURNING {pk}"

    def _into(self, connection) -> str:
        quote = connection.ops.quote_name
        columns = ", ".join(quote(field.column) for field in self.fields)
        return f"INSERT INTO {quote(self.model._meta.db_table)} ({columns})"
