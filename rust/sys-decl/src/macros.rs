//! The macros a bindings crate writes its lists in: each defines the items (type aliases,
//! `#[repr(C)]` structs, the loader struct of function pointers, constants) and, from the same
//! tokens, the table that describes them as data ([`Typedef`](crate::Typedef),
//! [`StructDecl`](crate::StructDecl), [`Decl`](crate::Decl), [`Constant`](crate::Constant)).
//! Each is invoked once per crate, at its root: the tables are `TYPEDEFS`, `STRUCTS`, `DECLS`
//! and `CONSTANTS` there.

/// The second of two expressions given, or the first, the default, when only it is given: an
/// optional part of a macro list (`as ...`) with its default.
#[doc(hidden)]
#[macro_export]
macro_rules! given_or {
    ($default:expr) => {
        $default
    };
    ($default:expr, $given:expr) => {
        $given
    };
}

/// Type aliases of C typedefs, each written `Name: "C definition" = RustType;`, and
/// `TYPEDEFS`, the list as data.
///
/// ```
/// sys_decl::typedefs! {
///     /// A handle.
///     Handle: "void *" = *mut std::ffi::c_void;
/// }
/// assert_eq!(TYPEDEFS[0].c_def, "void *");
/// ```
#[macro_export]
macro_rules! typedefs {
    ($($(#[$m:meta])* $name:ident: $c:literal = $rust:ty;)*) => {
        $($(#[$m])* pub type $name = $rust;)*

        /// The typedefs above as data: name, C definition, Rust definition.
        pub const TYPEDEFS: &[$crate::Typedef] = &[
            $($crate::Typedef { name: stringify!($name), c_def: $c, rust_def: stringify!($rust) },)*
        ];
    };
}

/// `#[repr(C)]` structs, each written `struct Name { field: RustType => "C field name", ... }`
/// (`struct Name as "C name"` where the data names it otherwise, as `S.f` for the anonymous
/// struct that is field `f` of `S`), and `STRUCTS`, the list as data. Each struct is `Clone`,
/// `Copy`, `Debug`, `PartialEq`, `Eq`, [`Zeroable`](crate::Zeroable), and `Default` with every
/// field zero (null pointers); its fields must be [`Zeroable`](crate::Zeroable) (integers,
/// arrays of them, raw pointers, structs of such a list), which the compiler checks.
///
/// ```
/// sys_decl::structs! {
///     /// A location.
///     struct Location {
///         /// Which device.
///         id: u32 => "id",
///         /// Where.
///         type_: u32 => "type",
///     }
/// }
/// assert_eq!(Location::default(), Location { id: 0, type_: 0 });
/// assert_eq!((STRUCTS[0].size, (STRUCTS[0].fields[1].offset)()), (8, 4));
/// ```
///
/// A field that may not be zero, such as a function pointer, does not compile:
///
/// ```compile_fail,E0277
/// sys_decl::structs! {
///     /// A callback is never null.
///     struct WithCallback {
///         /// The callback.
///         f: extern "C" fn() -> i32 => "f",
///     }
/// }
/// ```
#[macro_export]
macro_rules! structs {
    ($($(#[$m:meta])* struct $name:ident $(as $c_name:literal)? {
        $($(#[$fm:meta])* $field:ident: $ft:ty => $fc:literal,)*
    })*) => {
        $(
            $(#[$m])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            pub struct $name {
                $($(#[$fm])* pub $field: $ft,)*
            }

            // Every field's type is Zeroable, or this does not compile.
            const _: () = { $($crate::assert_zeroable::<$ft>();)* };

            // SAFETY: every field is Zeroable (checked just above at compile time), and a
            // `#[repr(C)]` struct's padding may hold any bytes: all-zero bytes are a valid value.
            unsafe impl $crate::Zeroable for $name {}

            /// All fields zero (null pointers): what the C library asks of the fields a call
            /// does not use.
            impl Default for $name {
                fn default() -> Self {
                    // SAFETY: the struct is Zeroable (above): all-zero bytes are a valid value.
                    unsafe { ::core::mem::zeroed() }
                }
            }
        )*

        /// The structs above as data: sizes, and each field's C name, Rust type and offset.
        pub const STRUCTS: &[$crate::StructDecl] = &[$(
            $crate::StructDecl {
                name: stringify!($name),
                c_name: $crate::given_or!(stringify!($name) $(, $c_name)?),
                size: ::core::mem::size_of::<$name>(),
                align: ::core::mem::align_of::<$name>(),
                fields: &[$($crate::Field {
                    c_name: $fc,
                    rust_type: stringify!($ft),
                    offset: || {
                        let value = ::core::mem::MaybeUninit::<$name>::uninit();
                        let base = value.as_ptr();
                        // SAFETY: addr_of! takes the field's address inside `value` without
                        // reading it or making a reference, so its being uninitialised is fine.
                        let field = unsafe { ::core::ptr::addr_of!((*base).$field) };
                        field as usize - base as usize
                    },
                },)*],
            },
        )*];
    };
}

/// The loader struct of a C library's functions and `DECLS`, its functions as data, written
/// as the struct's attributes and `pub struct Name;`, then one
/// `fn name(arg: RustType => "C type", ...) -> RustType => "C type";` per function
/// (`fn name as symbol(...)` where the header renames the API name to another symbol).
///
/// The struct has one `pub` field per function, named after it, of type
/// `unsafe extern "C" fn(...) -> ...`, and `Name::load(file)`, which loads the library with
/// [libloading](https://docs.rs/libloading) and resolves every symbol, failing (without
/// calling anything) if the library cannot be loaded or lacks any one of them; the library
/// stays loaded as long as the value lives. The invoking crate depends on `libloading`, which
/// the expansion names as `::libloading`.
///
/// Soundness rests on what the invoking crate states by invoking it: the library is a C
/// library whose initialisers only set up its own state (loading it has no other
/// precondition), and each prototype is the one its header declares for that symbol (the
/// crate's tests check the list against the data extracted from the header). Calling a field
/// is `unsafe`: the library's rules for its arguments are the caller's to keep.
#[macro_export]
macro_rules! functions {
    ($(#[$sm:meta])* pub struct $loader:ident;
     $($(#[$m:meta])* fn $name:ident $(as $symbol:ident)?
        ($($arg:ident: $t:ty => $c:literal),* $(,)?) -> $ret:ty => $cret:literal;)*) => {
        $(#[$sm])*
        pub struct $loader {
            $($(#[$m])* pub $name: unsafe extern "C" fn($($arg: $t),*) -> $ret,)*
            _library: ::libloading::Library,
        }

        impl $loader {
            /// Loads `name` (a file name searched like `dlopen` does, or a path) and resolves
            /// every function. Fails, without calling anything in the library, if it cannot be
            /// loaded or lacks any one of the symbols (the error names it).
            pub fn load(name: &str) -> ::core::result::Result<$loader, ::libloading::Error> {
                // SAFETY: loading runs the library's initialisers; the library this struct
                // binds (or a test stand-in of it) is a C library whose initialisers only set
                // up its own state, so loading it has no other precondition.
                let library = unsafe { ::libloading::Library::new(name)? };
                $(
                    // SAFETY: the symbol is the library's function that the header declares
                    // under this API name, and the type is its prototype there (both checked
                    // against the crate's data file by its tests). The pointer is kept beside
                    // the library it points into.
                    let $name = unsafe {
                        *library.get::<unsafe extern "C" fn($($t),*) -> $ret>(
                            concat!(
                                $crate::given_or!(stringify!($name) $(, stringify!($symbol))?),
                                "\0"
                            )
                            .as_bytes(),
                        )?
                    };
                )*
                Ok($loader { $($name,)* _library: library })
            }
        }

        impl ::core::fmt::Debug for $loader {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(stringify!($loader)).finish_non_exhaustive()
            }
        }

        #[doc = concat!("The functions of [`", stringify!($loader), "`] as data, in the order they are declared.")]
        pub const DECLS: &[$crate::Decl] = &[$(
            $crate::Decl {
                name: stringify!($name),
                symbol: $crate::given_or!(stringify!($name) $(, stringify!($symbol))?),
                c_ret: $cret,
                c_params: &[$($c),*],
                rust_ret: stringify!($ret),
                rust_params: &[$(stringify!($t)),*],
            },
        )*];
    };
}

/// Constants, each written `NAME: RustType = value;`, and `CONSTANTS`, the list as data.
///
/// ```
/// sys_decl::constants! {
///     /// Success.
///     OK: i32 = 0;
/// }
/// assert_eq!((CONSTANTS[0].name, CONSTANTS[0].value), ("OK", 0));
/// ```
#[macro_export]
macro_rules! constants {
    ($($(#[$m:meta])* $name:ident: $t:ty = $value:expr;)*) => {
        $($(#[$m])* pub const $name: $t = $value;)*

        /// The constants above as data: name, Rust type, value.
        pub const CONSTANTS: &[$crate::Constant] = &[
            $($crate::Constant {
                name: stringify!($name),
                rust_type: stringify!($t),
                value: $name as i64,
            },)*
        ];
    };
}
