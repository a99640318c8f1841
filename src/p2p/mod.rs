//! TODO-module placeholder
